# The programs of the docs, taken out of their pages so that tests can build and run them, and
# the docs cannot go stale. The pages are README.md, CONTRIBUTING.md and every Markdown file
# under docs/, at any depth (minidl_doc_pages). A program is a ```cpp block (a whole program,
# with main) between
#
#   <!-- readme-snippet:NAME:begin -->
#   <!-- readme-snippet:NAME:end -->
#
# and may be followed anywhere in the same page by the ```text block of what it prints, between
# <!-- readme-snippet-output:NAME:begin --> and <!-- readme-snippet-output:NAME:end -->. NAME is
# lower-case letters, digits and underscores, and unique across all the pages.
#
# Every HTML comment of a page that starts with "readme-snip" (in any case, or "readme_snip")
# must be one of these markers, paired as above: anything else (a misspelt marker, a missing
# end, a block that is not one fenced block) stops with an error naming the file and line, so a
# snippet is never dropped silently.
#
# minidl_doc_pages(<source_dir> <pages_var> [CONFIGURE_DEPENDS]) sets <pages_var> to the pages,
# relative to <source_dir>: README.md, CONTRIBUTING.md when it exists, then docs/**/*.md sorted.
#
# minidl_extract_doc_snippets(<source_dir> <pages> <out_dir> <names_var> <with_output_var>)
# extracts every page of the list <pages> (relative to <source_dir>) and fails naming both
# places when two pages use one NAME.
#
# minidl_extract_readme_snippets(<page> <out_dir> <names_var> <with_output_var> [<display>])
# extracts one page: it writes <out_dir>/snippet_NAME.cpp and, when there is an output block,
# snippet_NAME.output.txt, each rewritten only when its content changes (so an edit elsewhere
# rebuilds nothing), and sets <names_var> to the snippet names in page order,
# <names_var>_LINES to the line of each one's begin marker, and <with_output_var> to those with
# an output block. Messages name the page as <display> (default: its file name).
#
# As a script, the same on one file or on every page of a tree
# (tests/readme/check_readme_markers.cmake uses both):
#   cmake -DREADME=<file> -DOUT_DIR=<dir> -P readme_snippets.cmake
#   cmake -DSOURCE_DIR=<repository> -DOUT_DIR=<dir> -P readme_snippets.cmake

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  cmake_minimum_required(VERSION 3.25)  # the policies of the build (if(... IN_LIST ...))
endif()

# The line number of character `position` of `text`, 1-based.
function(_minidl_readme_line text position out)
  string(SUBSTRING "${text}" 0 ${position} before)
  string(REGEX MATCHALL "\n" newlines "${before}")
  list(LENGTH newlines count)
  math(EXPR line "${count} + 1")
  set(${out} ${line} PARENT_SCOPE)
endfunction()

# Writes `content` to `path` only when it differs from what is there.
function(_minidl_write_if_changed path content)
  file(WRITE "${path}.tmp" "${content}")
  configure_file("${path}.tmp" "${path}" COPYONLY)
  file(REMOVE "${path}.tmp")
endfunction()

function(minidl_extract_readme_snippets readme out_dir names_var with_output_var)
  file(READ "${readme}" text)
  if(ARGC GREATER 4)
    set(readme_name "${ARGV4}")
  else()
    get_filename_component(readme_name "${readme}" NAME)
  endif()
  set(marker_regex "^<!-- readme-(snippet|snippet-output):([a-z0-9_]+):(begin|end) -->$")
  set(names "")
  set(name_lines "")
  set(with_output "")
  set(open "")  # "kind:name" of the block being read, or empty
  set(position 0)
  string(LENGTH "${text}" text_length)
  while(position LESS text_length)
    string(SUBSTRING "${text}" ${position} -1 rest)
    string(FIND "${rest}" "<!--" comment_at)
    if(comment_at EQUAL -1)
      break()
    endif()
    math(EXPR comment_start "${position} + ${comment_at}")
    string(SUBSTRING "${rest}" ${comment_at} -1 rest)
    string(FIND "${rest}" "-->" close_at)
    _minidl_readme_line("${text}" ${comment_start} line)
    set(where "${readme_name}:${line}")
    if(close_at EQUAL -1)
      message(FATAL_ERROR "${where}: an HTML comment that is never closed with -->")
    endif()
    math(EXPR comment_length "${close_at} + 3")
    string(SUBSTRING "${rest}" 0 ${comment_length} comment)
    math(EXPR position "${comment_start} + ${comment_length}")
    # Anything that looks like an attempt at a snippet marker (any case, misspelt) is checked;
    # other comments, other tests' markers among them (readme-cmake-*), are left alone.
    if(NOT comment MATCHES "^<!--[ \t\r\n]*[Rr][Ee][Aa][Dd][Mm][Ee][-_ ]*[Ss][Nn][Ii][Pp]")
      continue()
    endif()
    if(NOT comment MATCHES "${marker_regex}")
      message(FATAL_ERROR
              "${where}: malformed README snippet marker '${comment}'. Expected exactly "
              "'<!-- readme-snippet:NAME:begin -->', '<!-- readme-snippet:NAME:end -->' or the "
              "same with readme-snippet-output, NAME being lower-case letters, digits and "
              "underscores (tests/readme/readme_snippets.cmake)")
    endif()
    set(kind "${CMAKE_MATCH_1}")
    set(name "${CMAKE_MATCH_2}")
    set(edge "${CMAKE_MATCH_3}")
    if(edge STREQUAL "begin")
      if(open)
        message(FATAL_ERROR "${where}: '${comment}' begins a block inside the block "
                            "${open_kind}:${open_name} of line ${open_line}, which has no end "
                            "marker before it")
      endif()
      if(kind STREQUAL "snippet" AND name IN_LIST names)
        message(FATAL_ERROR "${where}: a second README snippet named '${name}'")
      endif()
      if(kind STREQUAL "snippet-output" AND name IN_LIST with_output)
        message(FATAL_ERROR "${where}: a second output block for README snippet '${name}'")
      endif()
      set(open TRUE)
      set(open_kind "${kind}")
      set(open_name "${name}")
      set(open_line ${line})
      set(body_start ${position})
      continue()
    endif()
    # An end marker: it must close the open block of the same kind and name.
    if(NOT open)
      message(FATAL_ERROR "${where}: '${comment}' ends a block that was never begun")
    endif()
    if(NOT kind STREQUAL open_kind OR NOT name STREQUAL open_name)
      message(FATAL_ERROR "${where}: '${comment}' does not match the block begun on line "
                          "${open_line} (${open_kind}:${open_name})")
    endif()
    set(open "")
    math(EXPR body_length "${comment_start} - ${body_start}")
    string(SUBSTRING "${text}" ${body_start} ${body_length} body)
    set(block_where "${readme_name}:${open_line}: README ${kind} block '${name}'")
    if(NOT body MATCHES "^[ \t\r\n]*```([a-z+]*)\n(.*)```[ \t\r\n]*$")
      message(FATAL_ERROR "${block_where}: expected one ```-fenced block (and nothing else) "
                          "between its begin and end markers")
    endif()
    set(language "${CMAKE_MATCH_1}")
    set(content "${CMAKE_MATCH_2}")
    string(FIND "${content}" "```" inner_fence)
    if(NOT inner_fence EQUAL -1)
      message(FATAL_ERROR "${block_where}: expected one ```-fenced block between its markers, "
                          "found more than one")
    endif()
    if(kind STREQUAL "snippet")
      if(NOT language STREQUAL "cpp")
        message(FATAL_ERROR "${block_where}: expected a ```cpp block, got ```${language}")
      endif()
      if(NOT content MATCHES "int main[ \t]*\\(")
        message(FATAL_ERROR "${block_where}: expected a whole program (with int main), which "
                            "the test builds and runs as it is written")
      endif()
      list(APPEND names "${name}")
      list(APPEND name_lines ${open_line})
      _minidl_write_if_changed("${out_dir}/snippet_${name}.cpp" "${content}")
    else()
      if(NOT language STREQUAL "text")
        message(FATAL_ERROR "${block_where}: expected a ```text block, got ```${language}")
      endif()
      list(APPEND with_output "${name}")
      set(output_line_${name} ${open_line})
      _minidl_write_if_changed("${out_dir}/snippet_${name}.output.txt" "${content}")
    endif()
  endwhile()
  if(open)
    message(FATAL_ERROR "${readme_name}:${open_line}: README ${open_kind} block '${open_name}' "
                        "has no <!-- readme-${open_kind}:${open_name}:end --> marker")
  endif()
  foreach(name ${with_output})
    if(NOT name IN_LIST names)
      message(FATAL_ERROR "${readme_name}:${output_line_${name}}: an output block for README "
                          "snippet '${name}', but no snippet of that name")
    endif()
  endforeach()
  set(${names_var} "${names}" PARENT_SCOPE)
  set(${names_var}_LINES "${name_lines}" PARENT_SCOPE)
  set(${with_output_var} "${with_output}" PARENT_SCOPE)
endfunction()

function(minidl_doc_pages source_dir pages_var)
  set(depends "")
  if(ARGC GREATER 2)
    if(NOT ARGV2 STREQUAL "CONFIGURE_DEPENDS")
      message(FATAL_ERROR "minidl_doc_pages: unexpected argument '${ARGV2}'")
    endif()
    set(depends CONFIGURE_DEPENDS)
  endif()
  set(pages README.md)
  if(EXISTS "${source_dir}/CONTRIBUTING.md")
    list(APPEND pages CONTRIBUTING.md)
  endif()
  file(GLOB_RECURSE docs ${depends} RELATIVE "${source_dir}" "${source_dir}/docs/*.md")
  list(SORT docs)
  list(APPEND pages ${docs})
  set(${pages_var} "${pages}" PARENT_SCOPE)
endfunction()

function(minidl_extract_doc_snippets source_dir pages out_dir names_var with_output_var)
  set(all_names "")
  set(all_with_output "")
  foreach(page IN LISTS pages)
    minidl_extract_readme_snippets("${source_dir}/${page}" "${out_dir}" names with_output
                                   "${page}")
    set(index 0)
    foreach(name IN LISTS names)
      list(GET names_LINES ${index} line)
      math(EXPR index "${index} + 1")
      if(DEFINED first_place_${name})
        message(FATAL_ERROR "${page}:${line}: a second README snippet named '${name}' (the "
                            "first is at ${first_place_${name}}); snippet names are unique "
                            "across README.md, CONTRIBUTING.md and docs/")
      endif()
      set(first_place_${name} "${page}:${line}")
    endforeach()
    list(APPEND all_names ${names})
    list(APPEND all_with_output ${with_output})
  endforeach()
  set(${names_var} "${all_names}" PARENT_SCOPE)
  set(${with_output_var} "${all_with_output}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT OUT_DIR OR (NOT README AND NOT SOURCE_DIR))
    message(FATAL_ERROR "usage: cmake -DREADME=<file> -DOUT_DIR=<dir> -P readme_snippets.cmake, "
                        "or -DSOURCE_DIR=<repository> instead of -DREADME for every page")
  endif()
  if(README)
    minidl_extract_readme_snippets("${README}" "${OUT_DIR}" names with_output)
    message("README snippets: ${names}; with output: ${with_output}")
  else()
    minidl_doc_pages("${SOURCE_DIR}" pages)
    minidl_extract_doc_snippets("${SOURCE_DIR}" "${pages}" "${OUT_DIR}" names with_output)
    list(LENGTH pages page_count)
    list(LENGTH names name_count)
    list(LENGTH with_output output_count)
    message("${page_count} pages, ${name_count} snippets (${output_count} with output): ${names}")
  endif()
endif()
