# minidl_public_headers(<out> <header>): the public API is the umbrella header and every minidl
# header it reaches through #include "minidl/...", found by following the includes. <out> gets
# their paths relative to the source tree, sorted. Internal headers (kernel declarations,
# loader stages, allocator internals) are those no public header includes.
function(minidl_public_headers out umbrella)
  set(found "")
  set(pending "${umbrella}")
  while(pending)
    list(POP_FRONT pending header)
    if(header IN_LIST found)
      continue()
    endif()
    list(APPEND found "${header}")
    set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 "${PROJECT_SOURCE_DIR}/${header}")
    file(STRINGS "${PROJECT_SOURCE_DIR}/${header}" includes
         REGEX "^[ \t]*#[ \t]*include[ \t]+[\"<]minidl/")
    foreach(line ${includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+[\"<]minidl/([^\">]+)[\">].*" "\\1"
             included "${line}")
      if(NOT EXISTS "${PROJECT_SOURCE_DIR}/${included}")
        message(FATAL_ERROR "${header} includes minidl/${included}, which does not exist")
      endif()
      list(APPEND pending "${included}")
    endforeach()
  endwhile()
  list(SORT found)
  set(${out} "${found}" PARENT_SCOPE)
endfunction()
