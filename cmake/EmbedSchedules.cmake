# Writes OUT: a C++ file holding every schedules/*.sched file as a string, so the binary carries
# the library. Called at build time with -DOUT=… -DSRC_DIR=… -DFILES=a|b|c
set(content "// Generated from schedules/*.sched by cmake/EmbedSchedules.cmake. Do not edit.\nnamespace sg {\nextern const char* const kLibraryFiles[];\nextern const unsigned kLibraryFileCount;\nconst char* const kLibraryFiles[] = {\n")
string(REPLACE "|" ";" FILES "${FILES}")
set(count 0)
foreach(f IN LISTS FILES)
  file(READ "${SRC_DIR}/${f}" text)
  string(APPEND content "  \"schedules/${f}\",\n  R\"sgsched(${text})sgsched\",\n")
  math(EXPR count "${count} + 1")
endforeach()
string(APPEND content "  nullptr, nullptr};\nconst unsigned kLibraryFileCount = ${count};\n}  // namespace sg\n")
file(WRITE "${OUT}.tmp" "${content}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
