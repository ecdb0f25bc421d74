// qdq-doctor HTML report: renders the JSON in #report-data. Plain JavaScript, no library, nothing loaded.
// Every text from the user's files goes through esc() or textContent. URL fragments: #search=NAME selects the first
// layer (or diff region) whose name or ONNX node matches NAME.
(function () {
  'use strict';

  var D = JSON.parse(document.getElementById('report-data').textContent);
  var app = document.getElementById('app');
  var MAX_GRAPH_LAYERS = 6000;
  var MAX_TABLE_ROWS = 5000;
  var NODE_W = 230, NODE_H = 38, GAP_X = 34, RANK_H = 74;

  // ---- helpers ------------------------------------------------------------------------------------------------------
  var ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  function esc(text) {
    return String(text === null || text === undefined ? '' : text).replace(/[&<>"']/g, function (c) { return ESC[c]; });
  }
  function $(id) { return document.getElementById(id); }
  // A layer's state in the words of the text report (docs/terms.md); the JSON keeps its identifiers.
  var STATE_LABEL = { mapped: 'mapped', inserted_qdq: 'standalone Q/DQ', inserted_reformat: 'reformat',
    dropped: 'dropped', unattributed: 'unattributed' };
  function stateLabel(state) { return STATE_LABEL[state] || state; }
  // The root causes, largest saving first: a bar per cause (its saving against the engine's time), its findings and
  // the symptoms it explains folded under it, and how the saving was estimated (docs/savings.md).
  function causesHtml(causes, findings, totalMs) {
    if (!causes.length) { return ''; }
    var saved = causes.reduce(function (sum, c) { return sum + (c.saving_ms || 0); }, 0);
    var largest = causes.reduce(function (m, c) { return Math.max(m, c.saving_ms || 0); }, 0);
    var scale = totalMs ? totalMs : largest;
    function link(f) {
      return '<a class="chip" href="#finding-' + (f + 1) + '">' + (f + 1) + '. ' + esc(findings[f].rule) + '</a>';
    }
    return '<div id="causes"><h3>Root causes <span class="hint">by what fixing them saves' +
      (totalMs ? ': ' + fmtMs(saved) + ' of the engine\u2019s ' + fmtMs(totalMs) : '') + '</span></h3>' +
      causes.map(function (c, i) {
        var width = scale && c.saving_ms ? Math.max(0.5, 100 * c.saving_ms / scale) : 0;
        var owned = scale && c.involved_ms ? Math.max(0.5, 100 * c.involved_ms / scale) : 0;
        return '<details class="cause sev-' + esc(c.severity) + '" id="cause-' + (i + 1) + '"' + (i === 0 ? ' open' : '') +
          '><summary><span class="num">' + (i + 1) + '</span><span class="sev">' + esc(c.severity) + '</span>' +
          '<code class="rule">' + esc(c.title) + '</code><span class="saving">' +
          (c.saving_ms === null ? 'saving not estimated' : c.saving_ms === 0 ? 'saves nothing' :
            'saves ~' + fmtMs(c.saving_ms) + (totalMs ? ' (' + (100 * c.saving_ms / totalMs).toFixed(1) + '%)' : '') +
            ', ' + esc(c.confidence) + ' confidence') + '</span>' +
          '<span class="bar" title="saving / time of its layers, against the engine"><span class="owned" style="width:' +
          owned.toFixed(2) + '%"></span><span class="saved" style="width:' + width.toFixed(2) + '%"></span></span>' +
          '</summary><dl class="facts">' +
          (c.involved_ms === null ? '' : '<dt>owns</dt><dd>' + fmtMs(c.involved_ms) + ' in ' + c.layers + ' layer(s)</dd>') +
          '<dt>findings</dt><dd>' + c.findings.map(link).join('') + '</dd>' +
          (c.symptoms.length ? '<dt>symptoms</dt><dd>' + c.symptoms.map(link).join('') + '</dd>' : '') +
          (c.basis ? '<dt>how</dt><dd>' + esc(c.basis) + '</dd>' : '') + '</dl></details>';
      }).join('') + '</div>';
  }

  function fmtMs(value) {
    if (value === null || value === undefined) { return '\u2013'; }
    if (value !== 0 && Math.abs(value) < 0.0005) { return (value < 0 ? '-' : '') + '<0.001 ms'; }
    return value.toFixed(3) + ' ms';
  }
  function fmtSigned(value) {
    if (value === null || value === undefined) { return '\u2013'; }
    return (value > 0 ? '+' : '') + value.toFixed(3) + ' ms';
  }
  function fmtShare(part, total) {
    if (part === null || part === undefined || !total) { return ''; }
    var share = 100 * part / total;
    return (share > 0 && share < 0.1 ? '<0.1' : share.toFixed(1)) + '%';
  }
  function shortName(name, width) {
    return name.length <= width ? name : '\u2026' + name.slice(name.length - width + 1);
  }
  function clip(text, width) {
    return text.length <= width ? text : text.slice(0, width - 1) + '\u2026';
  }
  // The precision a label shows: the part after "->" for a conversion ("FP32->INT8" runs into INT8).
  function precClass(label) {
    var p = String(label || '');
    var arrow = p.lastIndexOf('->');
    if (arrow >= 0) { p = p.slice(arrow + 2); }
    if (/^(INT8|UINT8|FP8|INT4|FP4)/.test(p)) { return 'p-int8'; }
    if (/^(FP16|BF16)/.test(p)) { return 'p-fp16'; }
    if (/^FP32/.test(p)) { return 'p-fp32'; }
    return 'p-other';
  }
  function basename(path) {
    var slash = String(path).lastIndexOf('/');
    return slash < 0 ? path : path.slice(slash + 1);
  }
  // The input that names the report: the model, else the layer list, else the first file.
  function mainInput(inputs) {
    var kinds = ['onnx', 'layer-info', 'build-log', 'profile'];
    for (var k = 0; k < kinds.length; ++k) {
      for (var i = 0; i < inputs.length; ++i) { if (inputs[i].kind === kinds[k]) { return inputs[i]; } }
    }
    return inputs[0];
  }
  function inputsShort(inputs) {
    return '<span title="' + esc(inputsText(inputs)) + '">' + inputs.map(function (source) {
      return esc(source.kind) + ' <span class="mono">' + esc(basename(source.path)) + '</span>' +
        (source.trt_version ? ' (TensorRT ' + esc(source.trt_version) + ')' : '');
    }).join(' · ') + '</span>';
  }
  function inputsText(inputs) {
    return inputs.map(function (source) {
      return source.kind + ': ' + source.path + (source.trt_version ? ' (TensorRT ' + source.trt_version + ')' : '');
    }).join(' \u00b7 ');
  }
  // The build mode the prediction and the rules assumed: the version, weak or strong typing, and why.
  function buildModeLine(mode) {
    if (!mode) { return ''; }
    var version = mode.trt_version ? 'TensorRT ' + esc(mode.trt_version) : 'TensorRT version unknown';
    var typing = mode.typing === 'strong' ? 'strongly typed' : 'weakly typed ' + esc(mode.precision_flags.join(' '));
    return '<p class="inputs" id="build-mode" title="' + esc(mode.summary) + '">Build mode: ' + version + ' \u00b7 ' +
      typing + (mode.typing_assumed ? ' <span class="guess">(assumed: ' + esc(mode.typing_source.replace(/^assumed: /, '')) +
      ')</span>' : ' <span class="count">(' + esc(mode.typing_source) + ')</span>') + '</p>';
  }
  function count(id, value) {
    return '<span id="' + id + '" data-count="' + value + '">' + value + '</span>';
  }
  function scrollToSection(id) {
    var target = $(id);
    if (target && !onlySection) { target.scrollIntoView({ block: 'start' }); }
  }

  // Pan and zoom of an <svg> through its viewBox: wheel zooms around the pointer, dragging pans, buttons zoom and fit.
  // onClick(target) gets clicks that did not drag.
  function PanZoom(panel, svg, bounds, onClick) {
    var view = { x: bounds.x, y: bounds.y, w: bounds.w, h: bounds.h };
    function size() { return { w: panel.clientWidth || 800, h: panel.clientHeight || 600 }; }
    function apply() {
      var s = size();
      view.h = view.w * s.h / s.w;
      svg.setAttribute('viewBox', view.x + ' ' + view.y + ' ' + view.w + ' ' + view.h);
    }
    function scale() { return size().w / view.w; }
    function zoomAt(px, py, factor) {
      var s = size();
      var k = Math.min(Math.max(scale() * factor, 0.01), 8);
      var cx = view.x + px / s.w * view.w, cy = view.y + py / s.h * view.h;
      view.w = s.w / k;
      view.h = s.h / k;
      view.x = cx - px / s.w * view.w;
      view.y = cy - py / s.h * view.h;
      apply();
    }
    function fit() {
      var s = size();
      var k = Math.min(s.w / bounds.w, s.h / bounds.h);
      view.w = s.w / k;
      view.x = bounds.x - (view.w - bounds.w) / 2;
      view.y = bounds.y - (s.h / k - bounds.h) / 2;
      apply();
    }
    function show(k, cx, top) {
      var s = size();
      view.w = s.w / k;
      view.x = cx - view.w / 2;
      view.y = top;
      apply();
    }
    function center(cx, cy, minScale) {
      var s = size();
      var k = Math.max(scale(), minScale);
      view.w = s.w / k;
      view.h = s.h / k;
      view.x = cx - view.w / 2;
      view.y = cy - view.h / 2;
      apply();
    }
    svg.setAttribute('width', '100%');
    svg.setAttribute('height', '100%');
    svg.setAttribute('preserveAspectRatio', 'xMinYMin meet');
    panel.addEventListener('wheel', function (event) {
      event.preventDefault();
      var rect = panel.getBoundingClientRect();
      zoomAt(event.clientX - rect.left, event.clientY - rect.top, Math.exp(-event.deltaY * 0.0016));
    }, { passive: false });
    var drag = null;
    panel.addEventListener('pointerdown', function (event) {
      if (event.button !== 0 || event.target.closest('.graph-tools')) { return; }
      drag = { x: event.clientX, y: event.clientY, vx: view.x, vy: view.y, moved: false, target: event.target };
      panel.setPointerCapture(event.pointerId);
    });
    panel.addEventListener('pointermove', function (event) {
      if (!drag) { return; }
      var dx = event.clientX - drag.x, dy = event.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) { return; }
      drag.moved = true;
      panel.classList.add('dragging');
      var k = scale();
      view.x = drag.vx - dx / k;
      view.y = drag.vy - dy / k;
      apply();
    });
    function end(event) {
      if (!drag) { return; }
      var wasClick = !drag.moved, target = drag.target;
      drag = null;
      panel.classList.remove('dragging');
      if (panel.hasPointerCapture(event.pointerId)) { panel.releasePointerCapture(event.pointerId); }
      if (wasClick && onClick) { onClick(target); }
    }
    panel.addEventListener('pointerup', end);
    panel.addEventListener('pointercancel', end);
    var tools = document.createElement('div');
    tools.className = 'graph-tools';
    tools.innerHTML = '<button type="button" data-z="in" title="Zoom in">+</button>' +
      '<button type="button" data-z="out" title="Zoom out">\u2212</button>' +
      '<button type="button" data-z="fit" title="Show the whole graph">Fit</button>';
    tools.addEventListener('click', function (event) {
      var button = event.target.closest('button');
      if (!button) { return; }
      var s = size();
      if (button.getAttribute('data-z') === 'fit') { fit(); } else {
        zoomAt(s.w / 2, s.h / 2, button.getAttribute('data-z') === 'in' ? 1.5 : 1 / 1.5);
      }
    });
    panel.appendChild(tools);
    return { fit: fit, show: show, center: center, scale: scale, apply: apply };
  }

  // A bar chart as inline SVG: rows of [label, value, text, class].
  function barChart(rows) {
    if (!rows.length) { return '<p class="hint">nothing to show</p>'; }
    var max = 0;
    rows.forEach(function (row) { max = Math.max(max, row[1]); });
    var labelW = 170, textW = 235, width = 760, rowH = 22, barW = width - labelW - textW;
    var out = '<svg viewBox="0 0 ' + width + ' ' + (rows.length * rowH + 4) + '" role="img">';
    rows.forEach(function (row, i) {
      var y = i * rowH + 2;
      var w = max > 0 ? Math.max(row[1] / max * barW, row[1] > 0 ? 1.5 : 0) : 0;
      out += '<g><title>' + esc(row[0] + ': ' + row[2]) + '</title>' +
        '<text x="' + (labelW - 8) + '" y="' + (y + 15) + '" text-anchor="end">' + esc(clip(row[0], 28)) + '</text>' +
        '<rect class="' + row[3] + '" x="' + labelW + '" y="' + (y + 3) + '" width="' + w.toFixed(1) +
        '" height="' + (rowH - 7) + '" rx="2"></rect>' +
        '<text class="val" x="' + (labelW + w + 6).toFixed(1) + '" y="' + (y + 15) + '">' + esc(row[2]) + '</text></g>';
    });
    return out + '</svg>';
  }

  // ---- search (both pages) ------------------------------------------------------------------------------------------
  var searchIndex = null; // [{text, lower, target, via}]
  var searchActions = { select: null };
  function searchMatches(query) {
    var q = query.trim();
    if (!q || !searchIndex) { return []; }
    var lower = q.toLowerCase(), exact = [], contains = [], seen = {};
    searchIndex.forEach(function (entry) {
      var key = entry.target;
      if (entry.text === q) {
        if (!seen[key] || seen[key] === 'contains') {
          seen[key] = 'exact';
          exact.push(entry);
        }
      } else if (!seen[key] && entry.lower.indexOf(lower) >= 0) {
        seen[key] = 'contains';
        contains.push(entry);
      }
    });
    contains = contains.filter(function (entry) { return seen[entry.target] === 'contains'; });
    return exact.concat(contains);
  }
  function setupSearch(placeholder) {
    var input = $('search'), box = $('search-results');
    input.setAttribute('placeholder', placeholder);
    var current = [];
    function show(matches) {
      current = matches;
      if (!input.value.trim()) { box.hidden = true; return; }
      var html = '';
      matches.slice(0, 40).forEach(function (entry, i) {
        html += '<div data-k="' + i + '"' + (i === 0 ? ' class="active"' : '') + '>' + esc(clip(entry.label, 160)) +
          (entry.via ? '<br><span class="via">via ' + esc(clip(entry.via, 140)) + '</span>' : '') + '</div>';
      });
      if (!matches.length) { html = '<div class="none">no layer or ONNX node matches</div>'; }
      else if (matches.length > 40) { html += '<div class="none">' + (matches.length - 40) + ' more: type more of the name</div>'; }
      box.innerHTML = html;
      box.hidden = false;
    }
    input.addEventListener('input', function () { show(searchMatches(input.value)); });
    input.addEventListener('keydown', function (event) {
      if (event.key === 'Enter' && current.length) {
        searchActions.select(current[0]);
        box.hidden = true;
      } else if (event.key === 'Escape') {
        box.hidden = true;
      }
    });
    input.addEventListener('focus', function () { if (input.value.trim()) { show(searchMatches(input.value)); } });
    box.addEventListener('mousedown', function (event) {
      var item = event.target.closest('[data-k]');
      if (item) {
        event.preventDefault();
        searchActions.select(current[Number(item.getAttribute('data-k'))]);
        box.hidden = true;
      }
    });
    document.addEventListener('click', function (event) {
      if (!event.target.closest('.search')) { box.hidden = true; }
    });
  }
  // #view=SECTION shows that section alone (graph, layers, findings, ...); #search=NAME runs the search a person would
  // type and selects the first match. Both: #view=graph&search=NAME (the search last: NAME may hold '&').
  var onlySection = '';
  function decode(text) {
    try { return decodeURIComponent(text); } catch (e) { return text; }
  }
  function applyFragment() {
    var hash = location.hash.slice(1);
    var view = /^view=([A-Za-z-]+)(&|$)/.exec(hash);
    if (view) {
      onlySection = view[1];
      hash = hash.slice(view[0].length);
      Array.prototype.forEach.call(document.querySelectorAll('main > section'), function (section) {
        section.hidden = section.id !== onlySection;
      });
      document.body.setAttribute('data-view', onlySection);
    }
    if (hash.indexOf('search=') !== 0) { return; }
    var query = decode(hash.slice(7));
    $('search').value = query;
    var matches = searchMatches(query);
    document.body.setAttribute('data-search-matches', String(matches.length));
    if (matches.length) { searchActions.select(matches[0]); }
  }

  function headerHtml(links) {
    var nav = links.map(function (link) {
      return '<a data-go="' + link[0] + '">' + esc(link[1]) + '</a>';
    }).join('');
    return '<header class="top"><div class="brand">qdq-doctor</div><nav>' + nav + '</nav>' +
      '<div class="search"><input id="search" type="search" autocomplete="off" spellcheck="false">' +
      '<div id="search-results" hidden></div></div></header>';
  }
  function wireNav() {
    document.querySelector('header.top nav').addEventListener('click', function (event) {
      var link = event.target.closest('[data-go]');
      if (!link) { return; }
      if (onlySection) {
        onlySection = '';
        document.body.removeAttribute('data-view');
        Array.prototype.forEach.call(document.querySelectorAll('main > section'), function (section) { section.hidden = false; });
      }
      scrollToSection(link.getAttribute('data-go'));
    });
  }

  // ---- Myelin regions: one box each, opening to its kernels and the ONNX nodes they execute -------------------------
  function myelinHtml(regions, L, layerByName) {
    var html = '<h2>Myelin regions <span class="count">' + regions.length + '</span></h2><p class="hint">The parts ' +
      'TensorRT compiled with Myelin. Precision from the GEMM kernels where the layer list shows them ' +
      '(--profilingVerbosity=detailed), else from the region\'s tensors.</p>';
    regions.forEach(function (region, r) {
      var kinds = Object.keys(region.kernel_kinds).map(function (kind) {
        return esc(kind) + ' ' + region.kernel_kinds[kind];
      }).join(', ');
      var floatGemms = region.gemms.filter(function (gemm) {
        return gemm.quantized_nodes.length && !/INT8|FP8/.test(gemm.precision);
      });
      html += '<details class="myelin-region" id="myelin-' + r + '"' + (r === 0 ? ' open' : '') + '><summary><span class="mono">' +
        esc(region.id) + '</span> \u00b7 ' + (region.kernels_listed ? region.layers.length + ' kernels (' + kinds + ') \u00b7 ' : '') +
        region.onnx_nodes.length + ' ONNX nodes \u00b7 ' + region.qdq_nodes.length + ' Q/DQ absorbed \u00b7 <b>' +
        esc(region.precision) + '</b>' + (region.time_ms !== null ? ' \u00b7 ' + fmtMs(region.time_ms) : '') +
        (floatGemms.length ? ' \u00b7 <span class="warn">' + floatGemms.length + ' quantized GEMM' +
          (floatGemms.length > 1 ? 's' : '') + ' ran in float</span>' : '') +
        (region.attention ? ' \u00b7 attention ' + esc(region.attention) : '') + '</summary>';
      html += '<table class="myelin-kernels"><thead><tr><th>' + (region.kernels_listed ? 'Kernel' : 'Layer') +
        '</th><th>Kind</th><th>Precision</th><th>Time</th><th>ONNX nodes</th></tr></thead><tbody>';
      region.layers.forEach(function (name) {
        var i = layerByName[name], layer = i === undefined ? null : L[i];
        html += '<tr><td class="mono">' + esc(name) + '</td><td>' + esc(layer ? layer.t : '') + '</td><td>' +
          esc(layer ? layer.p : '') + '</td><td>' + (layer && layer.ms !== null && layer.ms !== undefined ? fmtMs(layer.ms) : '') +
          '</td><td class="mono">' + (layer ? layer.o.slice(0, 6).map(esc).join('<br>') +
            (layer.o.length > 6 ? '<br><span class="hint">+' + (layer.o.length - 6) + ' more (list below)</span>' : '') : '') +
          '</td></tr>';
      });
      html += '</tbody></table><p class="hint">Precision basis: ' + esc(region.precision_basis) + '.</p>';
      html += '<details class="myelin-nodes"><summary>' + region.onnx_nodes.length + ' ONNX nodes</summary><p class="mono">' +
        region.onnx_nodes.map(esc).join(' \u00b7 ') + '</p></details></details>';
    });
    return html;
  }

  // ---- diagnose -----------------------------------------------------------------------------------------------------
  function renderDiagnose() {
    var L = D.layers, F = D.findings, S = D.summary, T = D.tensors;
    var predicted = D.layer_source === 'predicted';
    var totalMs = S.total_ms;
    var findingsOf = L.map(function () { return []; });
    F.forEach(function (finding, f) {
      finding.layers.forEach(function (i) { if (findingsOf[i]) { findingsOf[i].push(f); } });
    });
    var layerByName = {};
    L.forEach(function (layer, i) { if (!(layer.n in layerByName)) { layerByName[layer.n] = i; } });

    var graphTitle = predicted ? 'Predicted engine' : 'Engine graph';
    var regions = D.myelin_regions || [];
    var sections = [['summary', 'Summary'], ['findings', 'Findings (' + F.length + ')'],
      ['graph', predicted ? 'Predicted engine' : 'Graph']];
    if (regions.length) { sections.push(['myelin', 'Myelin (' + regions.length + ')']); }
    sections.push(['layers', 'Layers (' + L.length + ')'], ['notes', 'Notes']);
    app.innerHTML = headerHtml(sections) +
      '<main><section id="summary"></section><section id="findings"></section><section id="graph"></section>' +
      (regions.length ? '<section id="myelin"></section>' : '') +
      '<section id="layers"></section><section id="notes"></section>' +
      '<footer>' + esc(D.tool) + ' \u00b7 self-contained report: it loads nothing from the network</footer></main>';
    wireNav();

    // Summary.
    var acc = S.layers, q = S.qdq_nodes, sev = S.findings;
    var title = D.inputs.length ? basename(mainInput(D.inputs).path) : 'no input';
    var summary = '<h1>Diagnosis of ' + esc(title) + (D.trt_version ? ' <span class="count">TensorRT ' + esc(D.trt_version) +
      '</span>' : '') + '</h1><p class="inputs">' + inputsShort(D.inputs) + '</p>' + buildModeLine(D.build_mode) +
      '<div class="cards">';
    summary += '<div class="card"><div class="label">Total time</div><div class="value" id="total-ms" data-ms="' +
      (totalMs === null ? '' : totalMs) + '">' + (S.has_timings ? fmtMs(totalMs) : 'no profile') + '</div>' +
      '<div class="sub">' + (S.has_timings ? 'sum of per-layer averages, per inference' :
        'give the --exportProfile JSON for times') + '</div></div>';
    if (predicted) {
      summary += '<div class="card"><div class="label">Predicted layers</div><div class="value">' +
        count('count-layers', L.length) + '</div><div class="sub">no engine layer list given: the layers ' +
        'TensorRT is expected to build from the model</div></div>';
    } else {
      summary += '<div class="card"><div class="label">Engine layers</div><div class="value">' +
        count('count-layers', acc.total) + '</div><div class="sub"><span>' + count('acc-mapped', acc.mapped) +
        ' mapped</span> \u00b7 <span>' + count('acc-inserted_qdq', acc.inserted_qdq) + ' standalone Q/DQ</span> \u00b7 <span>' +
        count('acc-inserted_reformat', acc.inserted_reformat) + ' reformat</span> \u00b7 <span>' +
        count('acc-dropped', acc.dropped) + ' dropped</span> \u00b7 <span>' +
        count('acc-unattributed', acc.unattributed) + ' unattributed</span></div></div>';
    }
    if (predicted) {
      // No engine: the predicted layers' roles, not the (empty) engine accounting.
      var roles = { standalone: 0, requantize: 0, reformat: 0 };
      L.forEach(function (layer) {
        var role = layer.k || '';
        if (role.indexOf('standalone-') === 0) { roles.standalone++; }
        else if (role === 'requantize') { roles.requantize++; }
        else if (role === 'reformat' || role === 'concat-copy') { roles.reformat++; }
      });
      summary += '<div class="card' + (roles.standalone ? ' bad' : '') + '"><div class="label">Standalone Q/DQ layers</div>' +
        '<div class="value">' + count('pred-standalone', roles.standalone) + '</div><div class="sub">predicted, and ' +
        count('pred-requantize', roles.requantize) + ' requantize (Scale) layer(s)</div></div>';
      summary += '<div class="card' + (roles.reformat ? ' warn' : '') + '"><div class="label">Reformats and copies</div>' +
        '<div class="value">' + count('pred-reformat', roles.reformat) + '</div><div class="sub">predicted layer(s) ' +
        'that execute no ONNX node</div></div>';
    } else {
      summary += '<div class="card' + (acc.inserted_qdq ? ' bad' : '') + '"><div class="label">Standalone Q/DQ layers</div>' +
        '<div class="value" id="qdq-ms">' + (S.has_timings ? fmtMs(S.standalone_qdq_ms) : acc.inserted_qdq) + '</div>' +
        '<div class="sub">' + acc.inserted_qdq + ' layer(s)' + (S.has_timings && totalMs ?
          ', ' + fmtShare(S.standalone_qdq_ms, totalMs) + ' of the time' : '') + '</div></div>';
      summary += '<div class="card' + (acc.inserted_reformat ? ' warn' : '') + '"><div class="label">Reformats</div>' +
        '<div class="value" id="reformat-ms">' + (S.has_timings ? fmtMs(S.reformat_ms) : acc.inserted_reformat) + '</div>' +
        '<div class="sub">' + acc.inserted_reformat + ' layer(s)' + (S.has_timings && totalMs ?
          ', ' + fmtShare(S.reformat_ms, totalMs) + ' of the time' : '') + '</div></div>';
    }
    summary += '<div class="card' + (sev.error ? ' bad' : sev.warning ? ' warn' : '') + '"><div class="label">Findings</div>' +
      '<div class="value">' + count('count-findings', F.length) + '</div><div class="sub sevs">' +
      '<span class="sev"><i class="sev-dot error"></i>' + count('count-error', sev.error) + ' error</span>' +
      '<span class="sev"><i class="sev-dot warning"></i>' + count('count-warning', sev.warning) + ' warning</span>' +
      '<span class="sev"><i class="sev-dot info"></i>' + count('count-info', sev.info) + ' info</span></div></div>';
    var pq = S.predicted_qdq;
    if (pq) {
      summary += '<div class="card"><div class="label">Q/DQ nodes</div><div class="value">' + count('count-qdq', q.total) +
        '</div><div class="sub">predicted: <span>' + count('pqdq-fused', pq.fused) + ' fused</span> \u00b7 <span>' +
        count('pqdq-standalone', pq.standalone) + ' standalone</span> \u00b7 <span>' +
        count('pqdq-requantize', pq.requantize) + ' requantize</span> \u00b7 <span>' +
        count('pqdq-folded', pq.folded) + ' folded</span> \u00b7 <span>' + count('pqdq-cancelled', pq.cancelled) +
        ' cancelled</span></div></div>';
    } else {
      summary += '<div class="card"><div class="label">Q/DQ nodes</div><div class="value">' + count('count-qdq', q.total) +
        '</div><div class="sub"><span>' + count('qdq-fused', q.fused) + ' fused</span> \u00b7 <span>' +
        count('qdq-standalone', q.standalone) + ' standalone</span> \u00b7 <span>' + count('qdq-folded', q.folded) +
        ' folded</span> \u00b7 <span>' + count('qdq-eliminated', q.eliminated) + ' eliminated</span> \u00b7 <span>' +
        count('qdq-unknown', q.unknown) + ' unknown</span></div></div>';
    }
    if (S.int8 && S.int8.quantized) {
      summary += '<div class="card' + (S.int8.not_int8 ? ' warn' : '') + '"><div class="label">Quantized ops in INT8</div>' +
        '<div class="value">' + S.int8.int8 + ' / ' + S.int8.quantized + '</div><div class="sub">' + S.int8.not_int8 +
        ' run in float, ' + S.int8.unknown + ' unknown (' + esc(S.int8.basis) + ')</div></div>';
    }
    if (S.tensor_core_share !== null && S.tensor_core_share !== undefined) {
      summary += '<div class="card"><div class="label">Tensor-core kernels</div><div class="value">' +
        (100 * S.tensor_core_share).toFixed(1) + '%</div><div class="sub">of the time, from the kernel names</div></div>';
    }
    summary += '</div>';
    var byPrecision = S.by_precision, byKind = S.by_kind;
    if (!byPrecision) { // predicted layers: counts only
      byPrecision = groupLayers(function (layer) { return layer.p || 'unknown'; });
      byKind = groupLayers(function (layer) { return layer.t || 'unknown'; });
    }
    function groupLayers(key) {
      var groups = {}, list = [];
      L.forEach(function (layer) {
        var name = key(layer);
        if (!groups[name]) { groups[name] = { name: name, layers: 0, ms: 0 }; list.push(groups[name]); }
        groups[name].layers += 1;
      });
      return list.sort(function (a, b) { return b.layers - a.layers || (a.name < b.name ? -1 : 1); });
    }
    function chartRows(groups, classOf) {
      var rows = groups.slice(0, 14).map(function (group) {
        var value = S.has_timings ? group.ms : group.layers;
        var text = S.has_timings ? fmtMs(group.ms) + ' \u00b7 ' + fmtShare(group.ms, totalMs) + ' \u00b7 ' + group.layers +
          ' layer' + (group.layers === 1 ? '' : 's') : group.layers + ' layer' + (group.layers === 1 ? '' : 's');
        return [group.name, value, text, classOf(group.name)];
      });
      if (groups.length > 14) {
        var rest = groups.slice(14), ms = 0, layers = 0;
        rest.forEach(function (group) { ms += group.ms; layers += group.layers; });
        rows.push([rest.length + ' more kinds', S.has_timings ? ms : layers, S.has_timings ? fmtMs(ms) + ' \u00b7 ' +
          layers + ' layers' : layers + ' layers', 'bar-kind']);
      }
      return rows;
    }
    var what = S.has_timings ? 'Time' : 'Layers';
    summary += '<div class="charts"><div class="chart" id="chart-precision"><h3>' + what + ' by precision</h3>' +
      barChart(chartRows(byPrecision, function (name) { return 'bar-' + precClass(name).slice(2); })) + '</div>' +
      '<div class="chart" id="chart-kind"><h3>' + what + ' by layer kind</h3>' +
      barChart(chartRows(byKind, function (name) {
        return 'bar-kind' + (/quantize/.test(name) ? ' k-qdq' : /reformat|copy/.test(name) ? ' k-reformat' : '');
      })) + '</div></div>';
    $('summary').innerHTML = summary;

    // Findings.
    var order = F.map(function (f, i) { return i; });
    var findingsSection = $('findings');
    findingsSection.innerHTML = '<h2>Findings <span class="count">' + F.length + '</span></h2>' +
      (F.length ? '<div class="toolbar">Sort: <button type="button" class="on" data-sort="worst">by root cause</button>' +
        '<button type="button" data-sort="saving">saving</button>' +
        '<button type="button" data-sort="cost">cost</button><button type="button" data-sort="rule">rule</button></div>' :
        '<p class="hint">No findings.</p>') + '<div id="finding-list"></div>';
    var list = $('finding-list');
    list.insertAdjacentHTML('beforebegin', causesHtml(D.causes || [], F, totalMs));
    var cards = F.map(function (finding, f) {
      var card = document.createElement('article');
      card.className = 'finding sev-' + finding.severity;
      card.id = 'finding-' + (f + 1);
      card.setAttribute('data-index', String(f));
      var layers = finding.engine_layers.slice(0, 60).map(function (name) {
        var i = layerByName[name];
        return '<span class="chip layer"' + (i === undefined ? '' : ' data-layer="' + i + '"') + ' title="' + esc(name) +
          '">' + esc(clip(name, 120)) + '</span>';
      }).join('') + (finding.engine_layers.length > 60 ? ' \u2026 ' + (finding.engine_layers.length - 60) + ' more' : '');
      var nodes = finding.onnx_nodes.slice(0, 60).map(function (name) {
        return '<span class="chip" data-node="' + esc(name) + '">' + esc(clip(name, 120)) + '</span>';
      }).join('') + (finding.onnx_nodes.length > 60 ? ' \u2026 ' + (finding.onnx_nodes.length - 60) + ' more' : '');
      var evidence = finding.evidence.map(function (e, k) {
        return (k === 5 ? '</ul><details><summary>' + (finding.evidence.length - 5) + ' more</summary><ul class="evidence">' : '') +
          '<li><span class="where">' + esc(e.file + (e.line ? ':' + e.line : '') + (e.field ? ' ' + e.field : '')) +
          '</span>' + (e.text ? ': ' + esc(e.text) : '') + '</li>';
      }).join('') + (finding.evidence.length > 5 ? '</ul></details><ul>' : '');
      card.innerHTML = '<div class="fhead"><span class="num">' + (f + 1) + '</span><span class="sev">' +
        esc(finding.severity) + '</span><code class="rule" title="docs/rules/' + esc(finding.rule) + '.md">' +
        esc(finding.rule) + '</code>' + (finding.likely ? '<span class="likely">likely</span>' : '') +
        (finding.root_cause === null ? '' : '<a class="cause-tag" href="#cause-' + (finding.root_cause + 1) + '">' +
          (finding.symptom ? 'symptom of ' : '') + 'cause ' + (finding.root_cause + 1) + '</a>') +
        '<span class="cost">' + (finding.saving_ms === null || finding.symptom ||
          (finding.saving_ms === 0 && finding.severity === 'info') ? '' : 'saves ~' + fmtMs(finding.saving_ms) + ' \u00b7 ') +
        (finding.cost_ms === null ? '' : 'cost ' + fmtMs(finding.cost_ms)) +
        // What the root-cause step gives the finding (each layer to one finding), where it differs from its cost.
        (finding.owned_ms === null || finding.owned_ms === undefined || finding.cost_ms === null ||
          Math.abs(finding.owned_ms - finding.cost_ms) < 0.0005 ? '' : ', owns ' + fmtMs(finding.owned_ms)) +
        '</span></div>' +
        '<div class="fbody"><div class="ftext"><p class="msg">' + esc(finding.message) + '</p><dl class="facts">' +
        (layers ? '<dt>' + (predicted ? 'layers' : 'engine layers') + '</dt><dd>' + layers + '</dd>' : '') +
        (nodes ? '<dt>ONNX nodes</dt><dd>' + nodes + '</dd>' : '') +
        (!finding.engine_layers.length && finding.layers.length ? '<dt>' + (predicted ? 'predicted layers' : 'layers') +
          '</dt><dd>' + finding.layers.slice(0, 20).map(function (i) {
            return '<span class="chip layer" data-layer="' + i + '" title="' + esc(L[i].n) + '">' + esc(clip(L[i].n, 120)) + '</span>';
          }).join('') + '</dd>' : '') +
        (evidence ? '<dt>evidence</dt><dd><ul class="evidence">' + evidence + '</ul></dd>' : '') +
        '<dt>fix</dt><dd><span class="fix">' + esc(finding.fix) + '</span></dd>' +
        '<dt>rule page</dt><dd class="mono rule-page">docs/rules/' + esc(finding.rule) + '.md</dd></dl></div><div class="fpic"></div></div>';
      var picture = document.querySelector('#pictures [data-finding="' + f + '"]');
      if (picture) {
        var holder = card.querySelector('.fpic');
        while (picture.firstChild) { holder.appendChild(picture.firstChild); }
        holder.title = 'click to switch between fitted and full size';
        holder.addEventListener('click', function () { holder.classList.toggle('full'); });
      }
      return card;
    });
    function showFindings(mode) {
      var sorted = order.slice();
      if (mode === 'saving') {
        sorted.sort(function (a, b) {
          var sa = F[a].saving_ms === null ? -1 : F[a].saving_ms, sb = F[b].saving_ms === null ? -1 : F[b].saving_ms;
          return sb - sa || a - b;
        });
      } else if (mode === 'cost') {
        sorted.sort(function (a, b) {
          var ca = F[a].cost_ms === null ? -1 : F[a].cost_ms, cb = F[b].cost_ms === null ? -1 : F[b].cost_ms;
          return cb - ca || a - b;
        });
      } else if (mode === 'rule') {
        sorted.sort(function (a, b) { return F[a].rule < F[b].rule ? -1 : F[a].rule > F[b].rule ? 1 : a - b; });
      }
      sorted.forEach(function (f) { list.appendChild(cards[f]); });
      findingsSection.setAttribute('data-sort', mode);
    }
    showFindings('worst');
    findingsSection.addEventListener('click', function (event) {
      var button = event.target.closest('[data-sort]');
      if (button && button.tagName === 'BUTTON') {
        findingsSection.querySelectorAll('.toolbar button').forEach(function (b) { b.classList.toggle('on', b === button); });
        showFindings(button.getAttribute('data-sort'));
        return;
      }
      var chip = event.target.closest('[data-layer]');
      if (chip) { select(Number(chip.getAttribute('data-layer')), true); return; }
      var node = event.target.closest('[data-node]');
      if (node) {
        var matches = searchMatches(node.getAttribute('data-node'));
        if (matches.length) { select(matches[0].target, true); }
      }
    });

    // Graph.
    var graph = $('graph');
    graph.innerHTML = '<h2>' + graphTitle + ' <span class="count">' + L.length + ' layers</span></h2>' +
      (predicted ? '<p class="hint">No engine layer list was given: these are the layers TensorRT is expected to ' +
        'build from the model (qdq-doctor predict).</p>' : '') +
      '<div class="graph-wrap"><div class="graph-panel" id="graph-panel"></div><aside id="details">' +
      '<p class="hint">Click a layer, or search for a layer or ONNX node name above.</p></aside></div>';
    var panel = $('graph-panel'), nodeEls = [], edgeEls = [], pos = null, zoom = null;
    if (!L.length) {
      panel.innerHTML = '<p class="empty">No layers: give the layer-info JSON, the profile or the verbose build log ' +
        'of the engine (or the ONNX model for the predicted layers).</p>';
    } else if (L.length > MAX_GRAPH_LAYERS) {
      panel.innerHTML = '<p class="empty">' + L.length + ' layers are more than this page draws (' + MAX_GRAPH_LAYERS +
        '): use the search and the table, or qdq-doctor graph --focus NAME for a picture.</p>';
    } else {
      pos = layoutGraph(L);
      drawGraph();
    }

    function layoutGraph(layers) {
      var n = layers.length, rank = new Array(n), preds = [], succs = [], i, j;
      for (i = 0; i < n; ++i) { succs.push([]); }
      for (i = 0; i < n; ++i) {
        preds.push(layers[i].pr.filter(function (p) { return p < i; }));
        preds[i].forEach(function (p) { succs[p].push(i); });
      }
      // Longest path from the inputs; layers that connect to nothing stay next to the layer run before them.
      for (i = 0; i < n; ++i) {
        var r = 0;
        if (preds[i].length) {
          r = -1;
          for (j = 0; j < preds[i].length; ++j) { r = Math.max(r, rank[preds[i][j]]); }
          r += 1;
        } else if (!succs[i].length && i > 0) {
          r = rank[i - 1];
        }
        rank[i] = r;
      }
      // Sources sit just above their first consumer.
      for (i = n - 1; i >= 0; --i) {
        if (!preds[i].length && succs[i].length) {
          var m = Infinity;
          for (j = 0; j < succs[i].length; ++j) { m = Math.min(m, rank[succs[i][j]]); }
          rank[i] = Math.max(0, m - 1);
        }
      }
      var rows = [], maxRank = 0;
      for (i = 0; i < n; ++i) { maxRank = Math.max(maxRank, rank[i]); }
      for (i = 0; i <= maxRank; ++i) { rows.push([]); }
      for (i = 0; i < n; ++i) { rows[rank[i]].push(i); }
      var x = new Float64Array(n), step = NODE_W + GAP_X;
      rows.forEach(function (row) { row.forEach(function (v, k) { x[v] = k * step; }); });
      function mean(list) {
        var sum = 0;
        for (var k = 0; k < list.length; ++k) { sum += x[list[k]]; }
        return sum / list.length;
      }
      function place(row, want) {
        row.sort(function (a, b) { return want[a] - want[b] || a - b; });
        var prev = -Infinity, shift = 0, k;
        for (k = 0; k < row.length; ++k) {
          x[row[k]] = Math.max(want[row[k]], prev + step);
          prev = x[row[k]];
          shift += want[row[k]] - x[row[k]];
        }
        shift /= row.length;
        for (k = 0; k < row.length; ++k) { x[row[k]] += shift; }
      }
      var want = new Float64Array(n);
      for (var pass = 0; pass < 4; ++pass) {
        var down = pass % 2 === 0;
        for (var ri = 0; ri <= maxRank; ++ri) {
          var row = rows[down ? ri : maxRank - ri];
          for (var k = 0; k < row.length; ++k) {
            var v = row[k], near = down ? preds[v] : succs[v];
            want[v] = near.length ? mean(near) : x[v];
          }
          place(row, want);
        }
      }
      var minX = Infinity, maxX = -Infinity;
      for (i = 0; i < n; ++i) { minX = Math.min(minX, x[i]); maxX = Math.max(maxX, x[i]); }
      var result = { x: [], y: [], rank: rank, preds: preds, succs: succs, rows: rows };
      for (i = 0; i < n; ++i) {
        result.x.push(x[i] - minX);
        result.y.push(rank[i] * RANK_H);
      }
      result.w = maxX - minX + NODE_W;
      result.h = maxRank * RANK_H + NODE_H;
      return result;
    }

    // The drawing's state: a predicted layer (state "predicted") is drawn by its role as an engine layer of that
    // state would be, so the legend's standalone Q/DQ and reformat marks hold on a predicted engine too.
    function drawnState(layer) {
      if (layer.s !== 'predicted') { return layer.s; }
      var role = layer.k || '';
      if (role.indexOf('standalone-') === 0 || role === 'requantize') { return 'inserted_qdq'; }
      if (role === 'reformat' || role === 'concat-copy') { return 'inserted_reformat'; }
      return 'predicted';
    }

    function drawGraph() {
      var nodes = '', edges = '';
      L.forEach(function (layer, i) {
        var state = drawnState(layer);
        var x = pos.x[i], y = pos.y[i];
        var sub = (layer.k || layer.t || '?') + ' \u00b7 ' + (layer.p || '?') + (layer.ms !== null ? ' \u00b7 ' + fmtMs(layer.ms) : '');
        nodes += '<g class="n ' + precClass(layer.p) + ' st-' + state + '" data-i="' + i + '" transform="translate(' +
          x.toFixed(1) + ',' + y + ')"><title>' + esc(layer.n) + '</title><rect width="' + NODE_W + '" height="' + NODE_H +
          '" rx="' + (state === 'inserted_qdq' ? 14 : 4) + '"></rect><text x="8" y="15">' + esc(shortName(layer.n, 30)) +
          '</text><text class="sub" x="8" y="30">' + esc(clip(sub, 39)) + '</text>' +
          (findingsOf[i].length ? '<circle class="badge" cx="' + (NODE_W - 7) + '" cy="7" r="5"></circle>' : '') + '</g>';
        layer.pr.forEach(function (p) {
          var x1 = pos.x[p] + NODE_W / 2, y1 = pos.y[p] + NODE_H, x2 = x + NODE_W / 2, y2 = y, d;
          var span = pos.rank[i] - pos.rank[p];
          if (span > 1 && Math.abs(x1 - x2) < NODE_W) {
            // Past the layers in between: out of the right sides, around them.
            var out = Math.max(pos.x[p], x) + NODE_W + 12 + 5 * Math.min(span, 12);
            d = 'M' + (pos.x[p] + NODE_W).toFixed(1) + ' ' + (pos.y[p] + NODE_H / 2) + 'C' + out.toFixed(1) + ' ' +
              (pos.y[p] + NODE_H / 2) + ' ' + out.toFixed(1) + ' ' + (y + NODE_H / 2) + ' ' + (x + NODE_W).toFixed(1) + ' ' +
              (y + NODE_H / 2);
          } else if (y2 > y1) {
            var dy = Math.min((y2 - y1) / 2, 60);
            d = 'M' + x1.toFixed(1) + ' ' + y1 + 'C' + x1.toFixed(1) + ' ' + (y1 + dy) + ' ' + x2.toFixed(1) + ' ' + (y2 - dy) +
              ' ' + x2.toFixed(1) + ' ' + y2;
          } else { // against the order (a loop or an unsorted list): around the side
            var side = Math.max(pos.x[p], x) + NODE_W + 20;
            d = 'M' + (pos.x[p] + NODE_W).toFixed(1) + ' ' + (pos.y[p] + NODE_H / 2) + 'C' + side + ' ' + (pos.y[p] + NODE_H / 2) +
              ' ' + side + ' ' + (y + NODE_H / 2) + ' ' + (x + NODE_W).toFixed(1) + ' ' + (y + NODE_H / 2);
          }
          edges += '<path class="e" data-f="' + p + '" data-t="' + i + '" d="' + d + '"></path>';
        });
      });
      panel.innerHTML = '<svg xmlns="http://www.w3.org/2000/svg" id="graph-svg"><g id="graph-edges">' + edges +
        '</g><g id="graph-nodes">' + nodes + '</g></svg><div class="legend">fill = precision:<i style="background:var(--int8)"></i>INT8' +
        '<i style="background:var(--fp16)"></i>FP16<i style="background:var(--fp32)"></i>FP32' +
        '<i style="background:var(--other)"></i>other<i class="qdq"></i>standalone Q/DQ<i class="ref"></i>reformat' +
        ' \u00b7 red dot = finding \u00b7 wheel zooms, drag pans</div>';
      var svg = panel.querySelector('svg');
      nodeEls = Array.prototype.slice.call(svg.querySelectorAll('g.n'));
      edgeEls = Array.prototype.slice.call(svg.querySelectorAll('path.e'));
      var margin = 20;
      zoom = PanZoom(panel, svg, { x: -margin, y: -margin, w: pos.w + 2 * margin, h: pos.h + 2 * margin }, function (target) {
        var node = target.closest && target.closest('g.n');
        if (node) { select(Number(node.getAttribute('data-i')), false); }
      });
      initialView();
    }
    // The whole graph when it is readable so, else the top of it at a readable size: the whole width when it fits,
    // else centred on the first layers.
    function initialView() {
      var width = panel.clientWidth || 800, height = panel.clientHeight || 600;
      var fitScale = Math.min(width / (pos.w + 40), height / (pos.h + 40));
      if (fitScale >= 0.6) {
        if (fitScale > 1) { zoom.show(1, pos.w / 2, -20 - Math.max(0, (height - pos.h - 40) / 2)); } else { zoom.fit(); }
        return;
      }
      var k = Math.max(Math.min(1, width / (pos.w + 40)), 0.6);
      var cx = pos.w / 2;
      if ((pos.w + 40) * k > width) {
        var first = pos.rows[0] || [0];
        cx = 0;
        first.forEach(function (i) { cx += pos.x[i]; });
        cx = cx / first.length + NODE_W / 2;
      }
      zoom.show(k, cx, -20);
    }

    // Details of the selected layer.
    function tensorList(ids) {
      if (!ids.length) { return '<p class="hint">none listed</p>'; }
      return '<ul>' + ids.map(function (t) {
        var tensor = T[t];
        return '<li class="tensor"><span class="mono">' + esc(tensor[0]) + '</span>' +
          (tensor[1] ? ' <span class="lbl">' + esc(tensor[1]) + '</span>' : '') + '</li>';
      }).join('') + '</ul>';
    }
    function layerLinks(list) {
      return list.slice(0, 30).map(function (i) {
        return '<span class="chip layer" data-layer="' + i + '" title="' + esc(L[i].n) + '">' + esc(clip(L[i].n, 60)) + '</span>';
      }).join('') + (list.length > 30 ? ' \u2026' : '');
    }
    function renderDetails(i) {
      var layer = L[i], details = $('details');
      var fs = findingsOf[i];
      var consumers = pos ? pos.succs[i] : [];
      details.setAttribute('data-layer', String(i));
      details.innerHTML = '<h3 id="details-name">' + esc(layer.n) + '</h3><dl class="facts">' +
        '<dt>type</dt><dd>' + esc(layer.t || 'not listed') + (layer.k && layer.k !== layer.t ? ' (' + esc(layer.k) + ')' : '') + '</dd>' +
        '<dt>precision</dt><dd><span class="prec ' + precClass(layer.p) + '">' + esc(layer.p || 'unknown') + '</span></dd>' +
        '<dt>time</dt><dd>' + fmtMs(layer.ms) + (layer.ms !== null && totalMs ? ' (' + fmtShare(layer.ms, totalMs) + ' of the total)' : '') + '</dd>' +
        '<dt>state</dt><dd class="state-' + esc(layer.s) + '">' + esc(stateLabel(layer.s)) + (layer.e ? ' <span class="hint">(' + esc(layer.e) + ')</span>' : '') + '</dd>' +
        '<dt>ONNX nodes</dt><dd>' + (layer.o.length ? '<ul>' + layer.o.map(function (node) { return '<li class="mono">' + esc(node) + '</li>'; }).join('') + '</ul>' : '<span class="hint">none</span>') + '</dd>' +
        '<dt>inputs</dt><dd>' + tensorList(layer.i) + '</dd>' +
        '<dt>outputs</dt><dd>' + tensorList(layer.out) + '</dd>' +
        '<dt>findings</dt><dd>' + (fs.length ? '<ul>' + fs.map(function (f) {
          return '<li><a href="#finding-' + (f + 1) + '" data-finding="' + f + '">' + (f + 1) + '. ' + esc(F[f].rule) + '</a>' +
            (F[f].cost_ms !== null ? ' \u00b7 ' + fmtMs(F[f].cost_ms) : '') + '</li>';
        }).join('') + '</ul>' : '<span class="hint">none</span>') + '</dd>' +
        (layer.pr.length ? '<dt>fed by</dt><dd>' + layerLinks(layer.pr) + '</dd>' : '') +
        (consumers.length ? '<dt>feeds</dt><dd>' + layerLinks(consumers) + '</dd>' : '') + '</dl>';
    }
    $('details').addEventListener('click', function (event) {
      var chip = event.target.closest('[data-layer]');
      if (chip && chip.tagName !== 'ASIDE') { select(Number(chip.getAttribute('data-layer')), false); return; }
      var link = event.target.closest('[data-finding]');
      if (link) {
        event.preventDefault();
        var card = cards[Number(link.getAttribute('data-finding'))];
        document.querySelectorAll('.finding[data-selected]').forEach(function (c) { c.removeAttribute('data-selected'); });
        card.setAttribute('data-selected', 'true');
        card.scrollIntoView({ block: 'center' });
      }
    });

    var selected = -1, hotEdges = [];
    function select(i, scroll) {
      if (!(i >= 0 && i < L.length)) { return; }
      if (selected >= 0) {
        if (nodeEls[selected]) { nodeEls[selected].removeAttribute('data-selected'); }
        var oldRow = rowOf[selected];
        if (oldRow) { oldRow.removeAttribute('data-selected'); }
      }
      hotEdges.forEach(function (edge) { edge.classList.remove('hot'); });
      hotEdges = [];
      selected = i;
      document.body.setAttribute('data-selected-layer', String(i));
      if (nodeEls[i]) {
        nodeEls[i].setAttribute('data-selected', 'true');
        edgeEls.forEach(function (edge) {
          if (edge.getAttribute('data-f') === String(i) || edge.getAttribute('data-t') === String(i)) {
            edge.classList.add('hot');
            hotEdges.push(edge);
          }
        });
        zoom.center(pos.x[i] + NODE_W / 2, pos.y[i] + NODE_H / 2, 0.85);
      }
      if (rowOf[i]) { rowOf[i].setAttribute('data-selected', 'true'); }
      renderDetails(i);
      if (scroll) { scrollToSection(nodeEls.length ? 'graph' : 'layers'); }
    }

    // Layer table.
    var states = {}, precisions = {};
    L.forEach(function (layer) { states[layer.s] = true; precisions[layer.p || 'unknown'] = true; });
    function options(map, label) {
      return Object.keys(map).sort().map(function (key) {
        return '<option value="' + esc(key) + '">' + esc(label ? label(key) : key) + '</option>';
      }).join('');
    }
    $('layers').innerHTML = '<h2>Layers <span class="count">' + L.length + '</span></h2><div class="toolbar">' +
      '<input id="layer-filter" type="search" placeholder="filter: layer, type, ONNX node, tensor">' +
      '<select id="state-filter"><option value="">every state</option>' + options(states, stateLabel) + '</select>' +
      '<select id="precision-filter"><option value="">every precision</option>' + options(precisions) + '</select>' +
      '<span id="layer-shown"></span></div><div class="table-wrap"><table class="data" id="layer-table"><thead><tr>' +
      '<th data-col="i">#</th><th data-col="n">layer</th><th data-col="t">type</th><th data-col="p">precision</th>' +
      '<th>formats (in \u2192 out)</th><th data-col="ms">time</th><th data-col="ms">share</th><th data-col="s">state</th>' +
      '<th data-col="f">findings</th></tr></thead><tbody></tbody></table></div>';
    var sortCol = 'i', sortDir = 1, rowOf = {};
    var lowerText = null;
    function layerText(i) {
      if (!lowerText) {
        lowerText = L.map(function (layer) {
          return (layer.n + '\n' + layer.t + '\n' + layer.k + '\n' + layer.o.join('\n') + '\n' +
            layer.i.concat(layer.out).map(function (t) { return T[t][0]; }).join('\n')).toLowerCase();
        });
      }
      return lowerText[i];
    }
    function formatsOf(layer) {
      var ins = layer.i.map(function (t) { return T[t][1]; }).filter(Boolean);
      var outs = layer.out.map(function (t) { return T[t][1]; }).filter(Boolean);
      return clip(ins.join(', '), 70) + (ins.length || outs.length ? ' \u2192 ' : '') + clip(outs.join(', '), 70);
    }
    function renderTable() {
      var filter = $('layer-filter').value.trim().toLowerCase();
      var state = $('state-filter').value, precision = $('precision-filter').value;
      var rows = [];
      for (var i = 0; i < L.length; ++i) {
        var layer = L[i];
        if (state && layer.s !== state) { continue; }
        if (precision && (layer.p || 'unknown') !== precision) { continue; }
        if (filter && layerText(i).indexOf(filter) < 0) { continue; }
        rows.push(i);
      }
      var key = function (i) {
        if (sortCol === 'f') { return findingsOf[i].length; }
        if (sortCol === 'i') { return i; }
        if (sortCol === 'ms') { return L[i].ms === null ? -1 : L[i].ms; }
        return String(L[i][sortCol] || '').toLowerCase();
      };
      rows.sort(function (a, b) {
        var ka = key(a), kb = key(b);
        return (ka < kb ? -1 : ka > kb ? 1 : 0) * sortDir || a - b;
      });
      var shown = rows.slice(0, MAX_TABLE_ROWS), html = '', maxMs = 0;
      L.forEach(function (layer) { if (layer.ms !== null) { maxMs = Math.max(maxMs, layer.ms); } });
      shown.forEach(function (i) {
        var layer = L[i];
        html += '<tr class="layer-row" data-i="' + i + '"' + (i === selected ? ' data-selected="true"' : '') + '><td class="num">' + i +
          '</td><td class="name mono" title="' + esc(layer.n) + '">' + esc(clip(layer.n, 200)) + '</td><td>' + esc(layer.t) +
          '</td><td><span class="prec ' + precClass(layer.p) + '">' + esc(layer.p || 'unknown') + '</span></td><td class="fmt">' +
          esc(formatsOf(layer)) + '</td><td class="num">' + fmtMs(layer.ms) + '</td><td class="num">' +
          (layer.ms !== null && totalMs ? fmtShare(layer.ms, totalMs) + '<span class="share-bar" style="width:' +
            Math.round(40 * layer.ms / (maxMs || 1)) + 'px"></span>' : '') + '</td><td class="state-' + esc(layer.s) + '">' +
          esc(stateLabel(layer.s)) + '</td><td class="num">' + (findingsOf[i].length || '') + '</td></tr>';
      });
      if (rows.length > shown.length) {
        html += '<tr><td colspan="9" class="more">' + (rows.length - shown.length) + ' more rows: narrow the filter</td></tr>';
      }
      var body = $('layer-table').tBodies[0];
      body.innerHTML = html;
      rowOf = {};
      Array.prototype.forEach.call(body.rows, function (row) {
        if (row.hasAttribute('data-i')) { rowOf[row.getAttribute('data-i')] = row; }
      });
      $('layer-shown').innerHTML = count('count-layer-rows', rows.length) + ' of ' + L.length + ' shown';
      document.querySelectorAll('#layer-table th').forEach(function (th) {
        th.classList.remove('sorted-asc', 'sorted-desc');
        if (th.getAttribute('data-col') === sortCol && th.textContent !== 'share') {
          th.classList.add(sortDir > 0 ? 'sorted-asc' : 'sorted-desc');
        }
      });
    }
    renderTable();
    ['layer-filter', 'state-filter', 'precision-filter'].forEach(function (id) {
      $(id).addEventListener('input', renderTable);
    });
    $('layer-table').tHead.addEventListener('click', function (event) {
      var th = event.target.closest('th[data-col]');
      if (!th) { return; }
      var col = th.getAttribute('data-col');
      sortDir = col === sortCol ? -sortDir : (col === 'ms' || col === 'f' ? -1 : 1);
      sortCol = col;
      renderTable();
    });
    $('layer-table').tBodies[0].addEventListener('click', function (event) {
      var row = event.target.closest('tr[data-i]');
      if (row) { select(Number(row.getAttribute('data-i')), true); }
    });

    if (regions.length) { $('myelin').innerHTML = myelinHtml(regions, L, layerByName); }

    // Notes.
    var notes = '<h2>Notes</h2>';
    if (D.prediction_check) {
      var check = D.prediction_check;
      notes += '<p>Simulator: ' + check.exact + ' of ' + check.real_layers + ' engine layers executing ONNX nodes predicted ' +
        'exactly (' + check.predicted_layers + ' predicted); standalone Q/DQ layers ' + check.real_standalone_qdq + ' real, ' +
        check.predicted_standalone_qdq + ' predicted.</p>';
      if (check.disagreements.length) {
        notes += '<details><summary>where TensorRT and the prediction disagree (' +
          (check.disagreements.length + check.more_disagreements) + ')</summary><ul class="notes">' +
          check.disagreements.map(function (text) { return '<li>' + esc(text) + '</li>'; }).join('') +
          (check.more_disagreements ? '<li>' + check.more_disagreements + ' more (see report.json)</li>' : '') + '</ul></details>';
      }
    }
    notes += D.notes.length ? '<ul class="notes">' + D.notes.map(function (text) { return '<li>' + esc(text) + '</li>'; }).join('') +
      '</ul>' : '<p class="hint">No notes.</p>';
    $('notes').innerHTML = notes;

    // Search: layer names, then the ONNX nodes they execute.
    searchIndex = [];
    L.forEach(function (layer, i) {
      searchIndex.push({ text: layer.n, lower: layer.n.toLowerCase(), target: i, label: layer.n, via: '' });
    });
    L.forEach(function (layer, i) {
      layer.o.forEach(function (node) {
        if (node !== layer.n) {
          searchIndex.push({ text: node, lower: node.toLowerCase(), target: i, label: layer.n, via: 'ONNX node ' + node });
        }
      });
    });
    searchActions.select = function (entry) {
      if (!rowOf[entry.target]) { // past the rows shown, or filtered out: show the table's rows with its name
        $('state-filter').value = '';
        $('precision-filter').value = '';
        $('layer-filter').value = L[entry.target].n;
        renderTable();
      }
      select(entry.target, true);
    };
    setupSearch('Find a layer or ONNX node (' + L.length + ' layers)');
  }

  // ---- diff ---------------------------------------------------------------------------------------------------------
  function renderDiff() {
    var R = D.regions, F = D.findings, B = D.baseline, C = D.candidate;
    app.innerHTML = headerHtml([['summary', 'Summary'], ['regions', 'Regions (' + R.length + ')'],
      ['diff-findings', 'Findings (' + F.length + ')'], ['picture', 'Picture'], ['notes', 'Notes']]) +
      '<main><section id="summary"></section><section id="regions"></section><section id="diff-findings"></section>' +
      '<section id="picture"></section><section id="notes"></section><footer>' + esc(D.tool) +
      ' \u00b7 self-contained report: it loads nothing from the network</footer></main>';
    wireNav();
    var delta = D.delta_ms;
    var summary = '<h1>Where the time went between two builds</h1><p class="inputs">baseline: ' + inputsShort(B.inputs) +
      '<br>candidate: ' + inputsShort(C.inputs) + '</p><div class="cards">' +
      '<div class="card"><div class="label">Baseline</div><div class="value" id="baseline-ms" data-ms="' +
      (B.total_ms === null ? '' : B.total_ms) + '">' + fmtMs(B.total_ms) + '</div><div class="sub">' + B.layers.length +
      ' layers \u00b7 total from ' + esc(B.total_source) + '</div></div>' +
      '<div class="card"><div class="label">Candidate</div><div class="value" id="candidate-ms" data-ms="' +
      (C.total_ms === null ? '' : C.total_ms) + '">' + fmtMs(C.total_ms) + '</div><div class="sub">' + C.layers.length +
      ' layers \u00b7 total from ' + esc(C.total_source) + '</div></div>' +
      '<div class="card ' + (delta > 0 ? 'bad' : '') + '"><div class="label">Delta</div><div class="value" id="delta-ms" data-ms="' +
      delta + '">' + fmtSigned(delta) + '</div><div class="sub">' + fmtSigned(D.explained_ms) + ' explained \u00b7 ' +
      fmtSigned(D.unexplained_ms) + ' unexplained</div></div>' +
      '<div class="card"><div class="label">Regions</div><div class="value">' + count('count-regions', R.length) +
      '</div><div class="sub">smallest layer sets on each side covering the same ONNX nodes' +
      (D.per_layer_times ? '' : '; no per-layer times on both sides') + '</div></div>' +
      '<div class="card"><div class="label">Findings</div><div class="value">' + count('count-findings', F.length) +
      '</div><div class="sub">candidate findings in these regions</div></div></div>';
    $('summary').innerHTML = summary;

    var maxDelta = 0;
    R.forEach(function (region) { if (region.delta_ms !== null) { maxDelta = Math.max(maxDelta, Math.abs(region.delta_ms)); } });
    function sideList(side, ids) {
      if (!ids.length) { return '<li class="hint">no layer</li>'; }
      return ids.map(function (i) {
        var layer = side.layers[i];
        return '<li><span class="prec ' + precClass(layer[2]) + '">' + esc(layer[2]) + '</span><span class="lname mono" title="' +
          esc(layer[0] + (layer[1] ? ' (' + layer[1] + ')' : '')) + '">' + esc(clip(layer[0], 160)) + '</span><span class="lms">' +
          (layer[3] === null ? '' : fmtMs(layer[3])) + '</span></li>';
      }).join('');
    }
    var regionCards = R.map(function (region, r) {
      var card = document.createElement('article');
      card.className = 'region';
      card.id = 'region-' + (r + 1);
      card.setAttribute('data-index', String(r));
      var d = region.delta_ms, kind = d > 0 ? 'slower' : d < 0 ? 'faster' : '';
      card.innerHTML = '<div class="rhead"><span class="num">' + (r + 1) + '</span><span class="delta ' + kind + '" data-ms="' +
        (d === null ? '' : d) + '">' + (d === null ? 'no times' : fmtSigned(d)) + '</span>' +
        (d !== null && maxDelta > 0 ? '<span class="dbar ' + kind + '" style="width:' + Math.max(2, Math.round(160 * Math.abs(d) / maxDelta)) +
          'px"></span>' : '') +
        (region.baseline_ms !== null ? '<span>' + fmtMs(region.baseline_ms) + ' \u2192 ' + fmtMs(region.candidate_ms) + '</span>' : '') +
        '<span class="tag">' + esc(region.alignment) + '</span>' +
        (region.explained ? '' : '<span class="tag unexplained">unexplained</span>') + '</div>' +
        '<div class="sides"><div class="side"><h4>baseline \u00b7 ' + region.baseline_layers.length + ' layer(s)</h4><ul>' +
        sideList(B, region.baseline_layers) + '</ul></div><div class="side"><h4>candidate \u00b7 ' +
        region.candidate_layers.length + ' layer(s)</h4><ul>' + sideList(C, region.candidate_layers) + '</ul></div></div>' +
        (region.differences.length || region.findings.length ? '<div class="rfoot">' +
          (region.differences.length ? '<ul>' + region.differences.map(function (text) { return '<li>' + esc(text) + '</li>'; }).join('') + '</ul>' : '') +
          (region.findings.length ? '<div>findings: ' + region.findings.map(function (f) {
            return '<a href="#diff-finding-' + (f + 1) + '" class="chip" data-finding="' + f + '">F' + (f + 1) + ' ' + esc(F[f].rule) + '</a>';
          }).join('') + '</div>' : '') + '</div>' : '');
      return card;
    });
    var regionsSection = $('regions');
    regionsSection.innerHTML = '<h2>Regions <span class="count">' + R.length + '</span></h2>' +
      (R.length ? '<div class="toolbar">Sort: <button type="button" class="on" data-sort="size">largest change</button>' +
        '<button type="button" data-sort="slower">slower first</button><button type="button" data-sort="faster">faster first</button>' +
        '</div>' : '<p class="hint">No regions.</p>') + '<div id="region-list"></div>';
    var regionList = $('region-list');
    function showRegions(mode) {
      var order = R.map(function (region, r) { return r; });
      if (mode !== 'size') {
        var sign = mode === 'slower' ? -1 : 1;
        order.sort(function (a, b) {
          var da = R[a].delta_ms === null ? 0 : R[a].delta_ms, db = R[b].delta_ms === null ? 0 : R[b].delta_ms;
          return sign * (da - db) || a - b;
        });
      }
      order.forEach(function (r) { regionList.appendChild(regionCards[r]); });
      regionsSection.setAttribute('data-sort', mode);
    }
    showRegions('size');
    regionsSection.addEventListener('click', function (event) {
      var button = event.target.closest('button[data-sort]');
      if (button) {
        regionsSection.querySelectorAll('.toolbar button').forEach(function (b) { b.classList.toggle('on', b === button); });
        showRegions(button.getAttribute('data-sort'));
      }
    });

    $('diff-findings').innerHTML = '<h2>Findings in these regions <span class="count">' + F.length + '</span></h2>' +
      (F.length ? '' : '<p class="hint">No findings.</p>') + F.map(function (finding, f) {
        return '<article class="finding sev-' + esc(finding.severity) + '" id="diff-finding-' + (f + 1) + '"><div class="fhead">' +
          '<span class="num">F' + (f + 1) + '</span><span class="sev">' + esc(finding.severity) + '</span><code class="rule">' +
          esc(finding.rule) + '</code>' + (finding.likely ? '<span class="likely">likely</span>' : '') + '<span class="cost">' +
          (finding.cost_ms === null ? '' : 'cost ' + fmtMs(finding.cost_ms)) + '</span></div><div class="fbody"><div class="ftext">' +
          '<p class="msg">' + esc(finding.message) + '</p><dl class="facts"><dt>regions</dt><dd>' +
          finding.regions.map(function (r) { return '<a class="chip" href="#region-' + (r + 1) + '" data-region="' + r + '">' + (r + 1) + '</a>'; }).join('') +
          '</dd><dt>fix</dt><dd><span class="fix">' + esc(finding.fix) + '</span></dd></dl></div></div></article>';
      }).join('');
    document.addEventListener('click', function (event) {
      var link = event.target.closest('a[data-region], a[data-finding]');
      if (!link) { return; }
      event.preventDefault();
      if (link.hasAttribute('data-region')) { selectRegion(Number(link.getAttribute('data-region'))); return; }
      var target = $('diff-finding-' + (Number(link.getAttribute('data-finding')) + 1));
      if (target) { target.scrollIntoView({ block: 'center' }); }
    });

    var pictureSection = $('picture');
    var picture = document.querySelector('#pictures [data-diff]');
    pictureSection.innerHTML = '<h2>Picture: the largest changes side by side</h2>';
    if (picture && picture.querySelector('svg')) {
      var panel = document.createElement('div');
      panel.className = 'graph-panel picture-panel';
      var svg = picture.querySelector('svg');
      panel.appendChild(svg);
      pictureSection.appendChild(panel);
      var box = (svg.getAttribute('viewBox') || '0 0 800 600').split(/[\s,]+/).map(Number);
      PanZoom(panel, svg, { x: box[0], y: box[1], w: box[2], h: box[3] }, null).fit();
    } else {
      pictureSection.innerHTML += '<p class="hint">No picture.</p>';
    }
    $('notes').innerHTML = '<h2>Notes</h2>' + (D.notes.length ? '<ul class="notes">' +
      D.notes.map(function (text) { return '<li>' + esc(text) + '</li>'; }).join('') + '</ul>' : '<p class="hint">No notes.</p>');

    var selected = -1;
    function selectRegion(r) {
      if (selected >= 0) { regionCards[selected].removeAttribute('data-selected'); }
      selected = r;
      regionCards[r].setAttribute('data-selected', 'true');
      document.body.setAttribute('data-selected-region', String(r));
      if (!onlySection) { regionCards[r].scrollIntoView({ block: 'start' }); }
    }
    searchIndex = [];
    R.forEach(function (region, r) {
      var label = 'region ' + (r + 1) + ' (' + (region.delta_ms === null ? 'no times' : fmtSigned(region.delta_ms)) + ')';
      region.baseline_layers.forEach(function (i) {
        var name = B.layers[i][0];
        searchIndex.push({ text: name, lower: name.toLowerCase(), target: r, label: label, via: 'baseline layer ' + name });
      });
      region.candidate_layers.forEach(function (i) {
        var name = C.layers[i][0];
        searchIndex.push({ text: name, lower: name.toLowerCase(), target: r, label: label, via: 'candidate layer ' + name });
      });
      region.onnx_nodes.forEach(function (name) {
        searchIndex.push({ text: name, lower: name.toLowerCase(), target: r, label: label, via: 'ONNX node ' + name });
      });
    });
    searchActions.select = function (entry) { selectRegion(entry.target); };
    setupSearch('Find a region by layer or ONNX node name');
  }

  // ---- start --------------------------------------------------------------------------------------------------------
  if (D.kind === 'diff') { renderDiff(); } else { renderDiagnose(); }
  applyFragment();
  window.addEventListener('hashchange', applyFragment);
  document.body.setAttribute('data-ready', '1');
  document.body.setAttribute('data-load-ms', performance.now().toFixed(1));
})();
