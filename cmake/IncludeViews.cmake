# Include views: the layering of docs/architecture.md's table, enforced by the compiler.
#
# Every include of ours is rooted at the project root ("core/graph/step_graph.hpp"), so putting
# the root on the include path would let any file include any folder. Instead each target (and
# each core/ layer) sees a view: a folder under the build tree holding links to only the folders
# and files of ours it may include. A file that includes a folder its layer may not then fails to
# compile ("No such file"), as well as failing tests/layering.sh (which also catches what a view
# cannot: relative includes, and the order of folders within a layer).
#
# stepgraph_include_view(NAME ENTRY...) makes ${CMAKE_BINARY_DIR}/include_views/NAME with a link
# for each ENTRY (a path under the project root: "core", "core/base", "core/pipeline.hpp") and
# sets STEPGRAPH_VIEW_<NAME> in the caller to that folder. An ENTRY "DIR/*" links each entry of
# DIR but its subfolders listed after an "EXCEPT" (exec/ without exec/cuda).
function(stepgraph_include_view name)
  set(dir ${CMAKE_BINARY_DIR}/include_views/${name})
  set(entries ${ARGN})
  set(except)
  list(FIND entries EXCEPT at)
  if(at GREATER -1)
    list(SUBLIST entries ${at} -1 except)
    list(REMOVE_AT except 0)
    list(SUBLIST entries 0 ${at} entries)
  endif()
  set(links)
  foreach(entry IN LISTS entries)
    if(entry MATCHES "^(.*)/\\*$")
      set(folder ${CMAKE_MATCH_1})
      file(GLOB children RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*)
      list(REMOVE_ITEM children ${except})
      list(APPEND links ${children})
    else()
      list(APPEND links ${entry})
    endif()
  endforeach()
  foreach(link IN LISTS links)
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${link})
      message(FATAL_ERROR "include view ${name}: ${link} is not in the project")
    endif()
    set(at_path ${dir}/${link})
    # Never remove anything here: a link is made once and kept (removing a folder's link
    # recursively could reach the sources it points at).
    if(NOT IS_SYMLINK ${at_path})
      get_filename_component(parent ${at_path} DIRECTORY)
      file(MAKE_DIRECTORY ${parent})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${link} ${at_path} SYMBOLIC)
    endif()
  endforeach()
  set(STEPGRAPH_VIEW_${name} ${dir} PARENT_SCOPE)
endfunction()
