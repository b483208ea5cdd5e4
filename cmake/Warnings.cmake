# One interface target carries the project's warning flags; every first-party target links it.
add_library(stepgraph_warnings INTERFACE)
target_compile_options(stepgraph_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough -Wno-unused-parameter>)
if(STEPGRAPH_WERROR)
  target_compile_options(stepgraph_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
