// The rules' name for the engine the report shows: qdq::EngineView (include/qdq/engine_view.h), shared with the
// consistency check, fix and diff.
#pragma once

#include "qdq/engine_view.h"
