# e2e.readme_front_page: README.md stays a front page, the guide lives in docs/.
#
#   cmake -DSOURCE_DIR=<repository root> -P tests/docs/readme_front_page.cmake
#
# 1. README.md has at most 250 lines (MAX_LINES overrides it).
# 2. Its Quickstart shows exactly two commands, tools/demo.sh and tools/test.sh, in the first
#    ```sh block after the "## Quickstart" heading.
# 3. Its layout arrow, the code span that starts with "core <-", lists the layers of the table in
#    docs/ARCHITECTURE.md (its rows "| N | `folder/` | ..."), lowest first: each "<-" separates
#    two layers, each "," two folders of one layer, in any order.
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED SOURCE_DIR OR SOURCE_DIR STREQUAL "")
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repository> -P readme_front_page.cmake")
endif()
if(NOT DEFINED MAX_LINES)
  set(MAX_LINES 250)
endif()
set(readme "${SOURCE_DIR}/README.md")
set(architecture "${SOURCE_DIR}/docs/ARCHITECTURE.md")
set(failures "")

# ---- 1. length ----
file(READ "${readme}" text)
string(REGEX MATCHALL "\n" newlines "${text}")
list(LENGTH newlines line_count)
if(line_count GREATER MAX_LINES)
  string(APPEND failures "\n  README.md has ${line_count} lines, more than ${MAX_LINES}: move "
                         "the detail to a page of docs/ and link it")
endif()

# ---- 2. the two quickstart commands ----
string(FIND "${text}" "\n## Quickstart\n" quickstart_at)
if(quickstart_at EQUAL -1)
  string(APPEND failures "\n  README.md has no '## Quickstart' heading")
else()
  string(SUBSTRING "${text}" ${quickstart_at} -1 quickstart)
  if(NOT quickstart MATCHES "\n```sh\n([^`]*)```")
    string(APPEND failures "\n  README.md's Quickstart has no ```sh block")
  elseif(NOT CMAKE_MATCH_1 STREQUAL "tools/demo.sh\ntools/test.sh\n")
    string(APPEND failures "\n  README.md's Quickstart block must be exactly the two commands "
                           "tools/demo.sh and tools/test.sh, found:\n${CMAKE_MATCH_1}")
  endif()
endif()

# ---- 3. the layout arrow against ARCHITECTURE.md's layers ----
# ARCHITECTURE.md's layers, "0:core" ..., as "layer_<N>" lists.
file(STRINGS "${architecture}" layer_rows REGEX "^\\| [0-9]+ \\| `[a-z_]+/` \\|")
set(layers "")
foreach(row IN LISTS layer_rows)
  string(REGEX MATCH "^\\| ([0-9]+) \\| `([a-z_]+)/`" _ "${row}")
  list(APPEND layer_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  list(APPEND layers ${CMAKE_MATCH_1})
endforeach()
list(REMOVE_DUPLICATES layers)
list(SORT layers COMPARE NATURAL)
set(expected "")
foreach(layer IN LISTS layers)
  list(SORT layer_${layer})
  list(JOIN layer_${layer} "," group)
  list(APPEND expected "${group}")
endforeach()
list(JOIN expected " <- " expected_arrow)
if(expected_arrow STREQUAL "")
  string(APPEND failures "\n  docs/ARCHITECTURE.md has no layer table (rows '| N | `folder/` |')")
endif()

string(REGEX MATCHALL "`core <-[^`]*`" arrows "${text}")
list(LENGTH arrows arrow_count)
if(NOT arrow_count EQUAL 1)
  string(APPEND failures "\n  README.md should have one layout arrow (a code span starting with "
                         "'core <-'), found ${arrow_count}")
else()
  string(REGEX REPLACE "^`(.*)`$" "\\1" arrow "${arrows}")
  string(REPLACE " <- " ";" groups "${arrow}")
  set(found "")
  foreach(group IN LISTS groups)
    string(REPLACE "," ";" folders "${group}")
    set(names "")
    foreach(folder IN LISTS folders)
      string(STRIP "${folder}" folder)
      list(APPEND names "${folder}")
    endforeach()
    list(SORT names)
    list(JOIN names "," group)
    list(APPEND found "${group}")
  endforeach()
  list(JOIN found " <- " found_arrow)
  if(NOT found_arrow STREQUAL expected_arrow)
    string(APPEND failures "\n  README.md's layout arrow `${arrow}` does not list the layers of "
                           "docs/ARCHITECTURE.md: expected (folders of a layer in any order) "
                           "${expected_arrow}")
  endif()
endif()

if(failures)
  message(FATAL_ERROR "readme_front_page:${failures}")
endif()
message(STATUS "readme_front_page: README.md has ${line_count} lines (at most ${MAX_LINES}), the "
               "two quickstart commands, and the layers of docs/ARCHITECTURE.md: ${arrow}")
