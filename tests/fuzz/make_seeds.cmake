# Builds a libFuzzer seed folder from the project's fixtures and samples (run at build time, so the fixtures are not
# duplicated in the repository). Arguments: SOURCE_DIR, OUTPUT_DIR, PATTERNS (a ;-list of globs under SOURCE_DIR).
# Each file is copied under a name made from its relative path, so samples/a/layers.json and samples/c/layers.json
# do not collide.
file(REMOVE_RECURSE "${OUTPUT_DIR}")
file(MAKE_DIRECTORY "${OUTPUT_DIR}")
set(count 0)
foreach(pattern IN LISTS PATTERNS)
    file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${pattern}")
    foreach(relative IN LISTS files)
        string(REPLACE "/" "__" flat "${relative}")
        file(COPY_FILE "${SOURCE_DIR}/${relative}" "${OUTPUT_DIR}/${flat}")
        math(EXPR count "${count} + 1")
    endforeach()
endforeach()
if(count EQUAL 0)
    message(FATAL_ERROR "no seed files matched ${PATTERNS}")
endif()
message(STATUS "${count} seed files in ${OUTPUT_DIR}")
