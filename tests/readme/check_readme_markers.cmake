# e2e.readme_snippet_markers: readme_snippets.cmake extracts a well-formed page and stops with
# an error naming the line for each kind of malformed marker or block; over a tree of pages
# (README.md, CONTRIBUTING.md, docs/**/*.md) it finds every page and stops when two pages use
# one snippet name, naming both places; and, given SOURCE_DIR, it extracts every page of this
# repository.
#
#   cmake -DWORK_DIR=<dir> [-DSOURCE_DIR=<repository>] -P check_readme_markers.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT WORK_DIR)
  message(FATAL_ERROR "usage: cmake -DWORK_DIR=<dir> [-DSOURCE_DIR=<repository>] "
                      "-P check_readme_markers.cmake")
endif()
set(extractor "${CMAKE_CURRENT_LIST_DIR}/readme_snippets.cmake")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(failures "")

# Extracts `markdown` (written as case_<name>.md) and returns its exit status and stderr.
function(extract name markdown status_var error_var)
  set(readme "${WORK_DIR}/case_${name}.md")
  file(WRITE "${readme}" "${markdown}")
  file(MAKE_DIRECTORY "${WORK_DIR}/${name}")
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DREADME=${readme}" "-DOUT_DIR=${WORK_DIR}/${name}"
                          -P "${extractor}"
                  RESULT_VARIABLE status ERROR_VARIABLE error OUTPUT_QUIET)
  set(${status_var} "${status}" PARENT_SCOPE)
  set(${error_var} "${error}" PARENT_SCOPE)
endfunction()

# A malformed README must fail, with `expected` (a regular expression) in its message.
function(expect_failure name expected markdown)
  extract(${name} "${markdown}" status error)
  string(REGEX REPLACE "[ \t\r\n]+" " " error "${error}")  # CMake wraps its messages
  if(status EQUAL 0)
    set(failures "${failures}\n  ${name}: extraction succeeded, expected an error" PARENT_SCOPE)
  elseif(NOT error MATCHES "${expected}")
    set(failures "${failures}\n  ${name}: the error does not match '${expected}':\n${error}"
        PARENT_SCOPE)
  else()
    string(REGEX MATCH "case_[a-z_]+\\.md:.*" first_line "${error}")
    string(REGEX REPLACE " Call Stack.*" "" first_line "${first_line}")
    message(STATUS "${name}: ${first_line}")
  endif()
endfunction()

set(program [=[
```cpp
int main() { return 0; }
```
]=])

# ---- a well-formed README: two snippets (one with its output); other comments and other
# tests' markers are left alone ----
extract(valid "# Title
<!-- a comment of someone else -->
<!-- readme-cmake-package:begin -->
```cmake
project(other_tests_block)
```
<!-- readme-cmake-package:end -->
<!-- readme-snippet:first:begin -->
${program}<!-- readme-snippet:first:end -->

Text, and a block that is not a snippet:
```cpp
int not_compiled;
```
<!-- readme-snippet-output:first:begin -->
```text
hello; [world]
```
<!-- readme-snippet-output:first:end -->
<!-- readme-snippet:second_2:begin -->
${program}<!-- readme-snippet:second_2:end -->
" status error)
if(NOT status EQUAL 0)
  string(APPEND failures "\n  valid: extraction failed:\n${error}")
else()
  file(READ "${WORK_DIR}/valid/snippet_first.cpp" first)
  file(READ "${WORK_DIR}/valid/snippet_first.output.txt" first_output)
  if(NOT first STREQUAL "int main() { return 0; }\n" OR
     NOT first_output STREQUAL "hello; [world]\n" OR
     NOT EXISTS "${WORK_DIR}/valid/snippet_second_2.cpp" OR
     EXISTS "${WORK_DIR}/valid/snippet_second_2.output.txt")
    string(APPEND failures "\n  valid: the extracted files are not the README's blocks")
  endif()
endif()

# ---- malformed ones ----
expect_failure(misspelt "case_misspelt\\.md:2: malformed README snippet marker" "
<!-- readme-snipet:x:begin -->
${program}<!-- readme-snippet:x:end -->
")
expect_failure(no_spaces "case_no_spaces\\.md:1: malformed" "<!--readme-snippet:x:begin-->
${program}<!--readme-snippet:x:end-->
")
expect_failure(upper_case_name "malformed README snippet marker" "<!-- readme-snippet:Tour:begin -->
${program}<!-- readme-snippet:Tour:end -->
")
expect_failure(underscore "case_underscore\\.md:2: malformed README snippet marker '<!-- readme_snippet:x:begin -->'" "
<!-- readme_snippet:x:begin -->
${program}<!-- readme_snippet:x:end -->
")
expect_failure(misspelt_output "malformed README snippet marker '<!-- readme-snippet-outptu:x:begin -->'" "<!-- readme-snippet:x:begin -->
${program}<!-- readme-snippet:x:end -->
<!-- readme-snippet-outptu:x:begin -->
```text
hello
```
<!-- readme-snippet-outptu:x:end -->
")
expect_failure(missing_end "case_missing_end\\.md:3: README snippet block 'x' has no <!-- readme-snippet:x:end -->" "

<!-- readme-snippet:x:begin -->
${program}
More text.
")
expect_failure(nested "case_nested\\.md:6: .* begins a block inside the block snippet:x of line 1" "<!-- readme-snippet:x:begin -->
${program}
<!-- readme-snippet:y:begin -->
${program}<!-- readme-snippet:y:end -->
")
expect_failure(mismatched_end "does not match the block begun on line 1 \\(snippet:x\\)" "<!-- readme-snippet:x:begin -->
${program}<!-- readme-snippet:y:end -->
")
expect_failure(end_without_begin "case_end_without_begin\\.md:2: .* ends a block that was never begun" "
<!-- readme-snippet:x:end -->
")
expect_failure(no_block "expected one ```-fenced block \\(and nothing else\\)" "<!-- readme-snippet:x:begin -->
int main() {}
<!-- readme-snippet:x:end -->
")
expect_failure(text_outside_block "expected one ```-fenced block \\(and nothing else\\)" "<!-- readme-snippet:x:begin -->
${program}It prints:
<!-- readme-snippet:x:end -->
")
expect_failure(two_blocks "found more than one" "<!-- readme-snippet:x:begin -->
${program}${program}<!-- readme-snippet:x:end -->
")
expect_failure(wrong_language "expected a ```cpp block, got ```sh" "<!-- readme-snippet:x:begin -->
```sh
int main() {}
```
<!-- readme-snippet:x:end -->
")
expect_failure(no_main "expected a whole program \\(with int main\\)" "<!-- readme-snippet:x:begin -->
```cpp
Tensor y = x * 2;
```
<!-- readme-snippet:x:end -->
")
expect_failure(duplicate "case_duplicate\\.md:6: a second README snippet named 'x'" "<!-- readme-snippet:x:begin -->
${program}<!-- readme-snippet:x:end -->
<!-- readme-snippet:x:begin -->
${program}<!-- readme-snippet:x:end -->
")
expect_failure(output_without_snippet "case_output_without_snippet\\.md:6: an output block for README snippet 'y', but no snippet" "<!-- readme-snippet:x:begin -->
${program}<!-- readme-snippet:x:end -->
<!-- readme-snippet-output:y:begin -->
```text
hello
```
<!-- readme-snippet-output:y:end -->
")
expect_failure(unclosed_comment "case_unclosed_comment\\.md:2: an HTML comment that is never closed" "
<!-- readme-snippet:x:begin
")

# ---- trees of pages ----
# Writes `markdown` as the page `path` of the tree WORK_DIR/tree_<name>.
function(write_page name path markdown)
  file(WRITE "${WORK_DIR}/tree_${name}/${path}" "${markdown}")
endfunction()

# Extracts every page of WORK_DIR/tree_<name>, and returns the exit status and the messages.
function(extract_tree name status_var messages_var)
  set(root "${WORK_DIR}/tree_${name}")
  file(MAKE_DIRECTORY "${root}/out")
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DSOURCE_DIR=${root}" "-DOUT_DIR=${root}/out"
                          -P "${extractor}"
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE error)
  string(REGEX REPLACE "[ \t\r\n]+" " " messages "${output}${error}")
  set(${status_var} "${status}" PARENT_SCOPE)
  set(${messages_var} "${messages}" PARENT_SCOPE)
endfunction()

# README.md, CONTRIBUTING.md and a page two folders down are all extracted; a Markdown file
# outside docs/ is not a page.
write_page(valid README.md "<!-- readme-snippet:front:begin -->
${program}<!-- readme-snippet:front:end -->
")
write_page(valid CONTRIBUTING.md "<!-- readme-snippet:recipe:begin -->
${program}<!-- readme-snippet:recipe:end -->
")
write_page(valid docs/guide/deep/page.md "<!-- readme-snippet:deep:begin -->
${program}<!-- readme-snippet:deep:end -->
<!-- readme-snippet-output:deep:begin -->
```text
hello
```
<!-- readme-snippet-output:deep:end -->
")
write_page(valid other/notes.md "<!-- readme-snippet:ignored:begin -->
${program}<!-- readme-snippet:ignored:end -->
")
extract_tree(valid status messages)
if(NOT status EQUAL 0)
  string(APPEND failures "\n  tree_valid: extraction failed:\n${messages}")
elseif(NOT messages MATCHES "3 pages, 3 snippets \\(1 with output\\): front;recipe;deep" OR
       NOT EXISTS "${WORK_DIR}/tree_valid/out/snippet_deep.output.txt" OR
       EXISTS "${WORK_DIR}/tree_valid/out/snippet_ignored.cpp")
  string(APPEND failures "\n  tree_valid: not the three pages' snippets:\n${messages}")
endif()

# One name in two pages: the error names both places.
write_page(duplicate README.md "# Front
<!-- readme-snippet:x:begin -->
${program}<!-- readme-snippet:x:end -->
")
write_page(duplicate docs/guide/page.md "

<!-- readme-snippet:x:begin -->
${program}<!-- readme-snippet:x:end -->
")
extract_tree(duplicate status messages)
set(expected "docs/guide/page\\.md:3: a second README snippet named 'x' \\(the first is at README\\.md:2\\)")
if(status EQUAL 0)
  string(APPEND failures "\n  tree_duplicate: extraction succeeded, expected an error")
elseif(NOT messages MATCHES "${expected}")
  string(APPEND failures "\n  tree_duplicate: the error does not match '${expected}':\n${messages}")
else()
  message(STATUS "tree_duplicate: ${CMAKE_MATCH_0}")
endif()

# A malformed marker in a page under docs/ is named with the page's path.
write_page(malformed README.md "# Front
")
write_page(malformed docs/page.md "
<!-- readme-snipet:x:begin -->
${program}<!-- readme-snippet:x:end -->
")
extract_tree(malformed status messages)
if(status EQUAL 0 OR NOT messages MATCHES "docs/page\\.md:2: malformed README snippet marker")
  string(APPEND failures "\n  tree_malformed: expected an error naming docs/page.md:2:\n${messages}")
else()
  message(STATUS "tree_malformed: docs/page.md:2: malformed README snippet marker")
endif()

# ---- this repository's pages ----
if(SOURCE_DIR)
  file(MAKE_DIRECTORY "${WORK_DIR}/repository")
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DSOURCE_DIR=${SOURCE_DIR}"
                          "-DOUT_DIR=${WORK_DIR}/repository" -P "${extractor}"
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE error)
  if(NOT status EQUAL 0)
    string(APPEND failures "\n  ${SOURCE_DIR}: extraction failed:\n${error}")
  else()
    string(STRIP "${output}${error}" output)
    message(STATUS "${SOURCE_DIR}: ${output}")
  endif()
endif()

if(failures)
  message(FATAL_ERROR "README marker checks failed:${failures}")
endif()
message("PASS: well-formed pages are extracted and every malformed case is an error")
