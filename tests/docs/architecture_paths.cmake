# Checks that every repository path named in docs/ARCHITECTURE.md exists, so the map cannot
# point at files that were moved or deleted. Run from anywhere:
#
#   cmake -DSOURCE_DIR=<repository root> -P tests/docs/architecture_paths.cmake
#
# (-DDOC=<file relative to SOURCE_DIR> checks another Markdown file by the same rules: the
# tests run it on README.md, CONTRIBUTING.md and every page under docs/; -DVERBOSE=ON lists
# every path and link checked.) It prints how many paths and links it checked, or fails listing
# every missing one with its line.
#
# Which tokens are paths. Only inline code spans count: text between single backticks on one
# line, outside fenced code blocks (``` or ~~~). A line with an odd number of backticks is an
# error (keep each span on one line), since its spans would pair up wrongly. A span T is a path
# when
#   1. it has none of: whitespace < > " ' ( ) { } [ ] = , ; \ and no "::", does not start with
#      / - # $ ~, and is not a URL ("://"). This leaves out code (`#include <cblas.h>`,
#      `nn::save`, `MINIDL_CUDA=ON`), commands (`ctest -L unit`), absolute paths outside the
#      repository and placeholders (`ops/<family>.cpp`, `checkpoint-<step>.safetensors`);
#   2. and one of these holds:
#      a. its first segment is a top-level folder of the repository, followed by "/":
#         .ci core data distributed docs include models nn ops optim tests tools train;
#      b. it starts with "minidl/" (an include's spelling): it is checked as include/<T>, which
#         the source tree's include/minidl/ links resolve;
#      c. it is one of the top-level files: CMakeLists.txt README.md CONTRIBUTING.md LICENSE
#         minidl.h .gitignore;
#      d. it contains "/" and ends in a source or document extension (.h .cuh .cpp .cu .md .sh
#         .cmake .py .txt .in .json) whatever its first segment, so that a misspelt folder
#         (`opts/cpu/conv.cpp`) is reported rather than skipped.
#   Anything else (`float16/bfloat16`, `kBuilt`, `*.cu`, `model.*`) is prose or code, and so is
#   a path inside a folder that the build or the tools make and git ignores (build/, build-*/,
#   .gpu-kit/, runs/: `.gpu-kit/manifest.txt`).
# A path exists when it names a file or a directory relative to SOURCE_DIR (a trailing "/"
# requires a directory), or, when it has * or ?, when it is a glob matching at least one entry.
#
# Links. Every Markdown link target outside code spans and fenced blocks, `[text](target)`, that
# is not a URL (scheme:...) is checked too, relative to the page's own folder: its file or folder
# must exist, and a #anchor must be the anchor of a heading of the target Markdown file (the page
# itself for a bare #anchor), made as GitHub makes them: the heading's text in lower case, every
# character but letters, digits, spaces, - and _ removed, spaces as -.
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED SOURCE_DIR OR SOURCE_DIR STREQUAL "")
  message(FATAL_ERROR "architecture_paths: pass the repository root, "
                      "cmake -DSOURCE_DIR=<repository> -P tests/docs/architecture_paths.cmake")
endif()
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)
if(NOT DEFINED DOC OR DOC STREQUAL "")
  set(DOC "docs/ARCHITECTURE.md")
endif()
set(doc_file "${SOURCE_DIR}/${DOC}")
if(NOT EXISTS "${doc_file}")
  message(FATAL_ERROR "architecture_paths: ${doc_file} does not exist")
endif()

set(top_level_folders .ci core data distributed docs include models nn ops optim tests tools train)
set(top_level_files CMakeLists.txt README.md CONTRIBUTING.md LICENSE minidl.h .gitignore)
list(JOIN top_level_folders "|" folder_alternatives)
string(REPLACE "." "\\." folder_alternatives "${folder_alternatives}")
set(path_extension_regex "\\.(h|cuh|cpp|cu|md|sh|cmake|py|txt|in|json)$")

get_filename_component(doc_dir "${doc_file}" DIRECTORY)

# The anchors of the headings of Markdown file `file` (absolute), as a list in `out`. A fenced
# line that looks like a heading (a shell comment) adds an anchor too, which can only let a
# wrong link pass, never fail a right one.
function(markdown_anchors file out)
  file(STRINGS "${file}" headings REGEX "^#+[ \t]")
  set(anchors "")
  foreach(heading IN LISTS headings)
    string(REGEX REPLACE "^#+[ \t]+" "" anchor "${heading}")
    string(STRIP "${anchor}" anchor)
    string(TOLOWER "${anchor}" anchor)
    string(REGEX REPLACE "[^a-z0-9 _-]" "" anchor "${anchor}")
    string(REPLACE " " "-" anchor "${anchor}")
    list(APPEND anchors "${anchor}")
  endforeach()
  set(${out} "${anchors}" PARENT_SCOPE)
endfunction()

# The text as a CMake list of lines. ; [ ] and \ mean something in CMake lists, so they become
# placeholders first; each placeholder holds a '<', which rule 1 rejects, so no path has one.
file(READ "${doc_file}" text)
string(REPLACE "\\" "<backslash>" text "${text}")
string(REPLACE ";" "<semicolon>" text "${text}")
string(REPLACE "[" "<lsqb>" text "${text}")
string(REPLACE "]" "<rsqb>" text "${text}")
string(REPLACE "\n" ";" lines "${text}")

set(line_number 0)
set(in_fence FALSE)
set(checked 0)
set(links_checked 0)
set(missing "")
foreach(line IN LISTS lines)
  math(EXPR line_number "${line_number} + 1")
  if(line MATCHES "^[ \t]*(```|~~~)")
    if(in_fence)
      set(in_fence FALSE)
    else()
      set(in_fence TRUE)
    endif()
    continue()
  endif()
  if(in_fence)
    continue()
  endif()
  string(REGEX MATCHALL "`" backticks "${line}")
  list(LENGTH backticks backtick_count)
  math(EXPR unpaired "${backtick_count} % 2")
  if(unpaired)
    list(APPEND missing
         "  ${DOC}:${line_number}: odd number of backticks (keep each code span on one line)")
    continue()
  endif()
  # Links, outside code spans.
  string(REGEX REPLACE "`[^`]+`" "" prose "${line}")
  string(REGEX MATCHALL "<rsqb>\\([^() \t]+\\)" links "${prose}")
  foreach(link IN LISTS links)
    string(REGEX REPLACE "^<rsqb>\\((.*)\\)$" "\\1" target "${link}")
    if(target MATCHES "^[A-Za-z][A-Za-z0-9+.-]*:")  # a URL: https:, mailto:
      continue()
    endif()
    math(EXPR links_checked "${links_checked} + 1")
    if(VERBOSE)
      message(STATUS "${DOC}:${line_number}: link ${target}")
    endif()
    string(FIND "${target}" "#" hash_at)
    if(hash_at EQUAL -1)
      set(target_path "${target}")
      set(anchor "")
    else()
      string(SUBSTRING "${target}" 0 ${hash_at} target_path)
      math(EXPR anchor_at "${hash_at} + 1")
      string(SUBSTRING "${target}" ${anchor_at} -1 anchor)
    endif()
    if(target_path STREQUAL "")
      set(target_file "${doc_file}")
    else()
      get_filename_component(target_file "${doc_dir}/${target_path}" ABSOLUTE)
      if(NOT EXISTS "${target_file}")
        list(APPEND missing "  ${DOC}:${line_number}: link (${target}): no such file or folder")
        continue()
      endif()
    endif()
    if(NOT anchor STREQUAL "")
      if(NOT target_file MATCHES "\\.md$" OR IS_DIRECTORY "${target_file}")
        list(APPEND missing
             "  ${DOC}:${line_number}: link (${target}): an anchor into a file that is not Markdown")
        continue()
      endif()
      markdown_anchors("${target_file}" anchors)
      if(NOT anchor IN_LIST anchors)
        file(RELATIVE_PATH target_name "${SOURCE_DIR}" "${target_file}")
        list(APPEND missing
             "  ${DOC}:${line_number}: link (${target}): no heading of ${target_name} has that anchor")
      endif()
    endif()
  endforeach()

  string(REGEX MATCHALL "`[^`]+`" spans "${line}")
  foreach(span IN LISTS spans)
    string(LENGTH "${span}" span_length)
    math(EXPR token_length "${span_length} - 2")
    string(SUBSTRING "${span}" 1 ${token_length} token)

    # Rule 1: not code, a command, a URL, an absolute path or a placeholder.
    if(token MATCHES "[ \t<>\"'(){}=,]" OR token MATCHES "::" OR token MATCHES "://"
       OR token MATCHES "^[-/#$~]" OR token MATCHES "^(build|build-[^/]*|\\.gpu-kit|runs)/")
      continue()
    endif()
    # Rule 2: a repository path, and where to look for it.
    set(path "")
    if(token MATCHES "^(${folder_alternatives})/")
      set(path "${token}")
    elseif(token MATCHES "^minidl/")
      set(path "include/${token}")
    elseif(token IN_LIST top_level_files)
      set(path "${token}")
    elseif(token MATCHES "/" AND token MATCHES "${path_extension_regex}")
      set(path "${token}")
    endif()
    if(path STREQUAL "")
      continue()
    endif()

    math(EXPR checked "${checked} + 1")
    if(VERBOSE)
      message(STATUS "${DOC}:${line_number}: ${path}")
    endif()
    set(found FALSE)
    if(path MATCHES "[*?]")
      string(REGEX REPLACE "/$" "" pattern "${path}")
      file(GLOB matches LIST_DIRECTORIES true "${SOURCE_DIR}/${pattern}")
      if(matches)
        set(found TRUE)
      endif()
    elseif(path MATCHES "/$")
      if(IS_DIRECTORY "${SOURCE_DIR}/${path}")
        set(found TRUE)
      endif()
    elseif(EXISTS "${SOURCE_DIR}/${path}")
      set(found TRUE)
    endif()
    if(NOT found)
      if(path STREQUAL token)
        list(APPEND missing "  ${DOC}:${line_number}: `${token}`")
      else()
        list(APPEND missing "  ${DOC}:${line_number}: `${token}` (looked for ${path})")
      endif()
    endif()
  endforeach()
endforeach()

if(in_fence)
  message(FATAL_ERROR "architecture_paths: ${DOC} ends inside a fenced code block")
endif()
if(checked EQUAL 0 AND links_checked EQUAL 0)
  message(FATAL_ERROR "architecture_paths: found no repository paths in ${DOC}; "
                      "is it the right file?")
endif()
if(missing)
  list(LENGTH missing missing_count)
  list(JOIN missing "\n" missing_lines)
  message(FATAL_ERROR "architecture_paths: ${missing_count} problem(s) in ${DOC} (${checked} "
                      "paths and ${links_checked} links checked against ${SOURCE_DIR}):\n"
                      "${missing_lines}")
endif()
message(STATUS "architecture_paths: all ${checked} paths and ${links_checked} links named in "
               "${DOC} exist")
