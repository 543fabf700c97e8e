# SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause
# ABI layout tests: compare sizeof/alignof/offsetof/enum/macro values of our
# headers with a reference set (see buildlib/layout_table.py).
#
# rdma_layout_test(NAME <name>
#                  REF_INCLUDES <dirs...>   reference include dirs (may be empty:
#                                           then the system path, /usr/include)
#                  OUR_INCLUDES <dirs...>   our include dirs, searched first
#                  HEADERS <hdrs...>        relative to an include dir
#                  [OUR_ONLY_HEADERS <hdrs...>]  headers the reference lacks
#                                           (their keys belong in EXTRAS)
#                  [EXTRAS <file>]          keys allowed to exist only in ours
#                  [DEPENDS <targets/files...>])
# Registers the ctest `layout.<name>`.

find_package(Python3 COMPONENTS Interpreter)
find_program(RDMA_LAYOUT_CLANG NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
set(RDMA_LAYOUT_TOOL ${CMAKE_CURRENT_LIST_DIR}/layout_table.py)

function(rdma_layout_test)
  cmake_parse_arguments(LT "" "NAME;EXTRAS" "REF_INCLUDES;OUR_INCLUDES;HEADERS;OUR_ONLY_HEADERS;DEPENDS" ${ARGN})
  if(NOT LT_NAME OR NOT LT_HEADERS OR NOT LT_OUR_INCLUDES)
    message(FATAL_ERROR "rdma_layout_test: NAME, OUR_INCLUDES and HEADERS are required")
  endif()
  if(NOT RDMA_LAYOUT_CLANG OR NOT Python3_Interpreter_FOUND OR NOT TARGET GTest::gtest_main)
    message(STATUS "layout.${LT_NAME} skipped: needs clang, python3 and GoogleTest")
    return()
  endif()

  set(dir ${CMAKE_CURRENT_BINARY_DIR}/layout_${LT_NAME})
  set(extras "")
  if(LT_EXTRAS)
    get_filename_component(extras ${LT_EXTRAS} ABSOLUTE)
  endif()

  foreach(side ref ours)
    if(side STREQUAL "ref")
      set(incs ${LT_REF_INCLUDES})
      set(hdrs ${LT_HEADERS})
      set(expect ${LT_REF_INCLUDES})
      if(NOT expect)
        set(expect /usr/include)
      endif()
    else()
      set(incs ${LT_OUR_INCLUDES})
      set(hdrs ${LT_HEADERS} ${LT_OUR_ONLY_HEADERS})
      set(expect ${LT_OUR_INCLUDES})
    endif()

    # The generation depends on the header files themselves (as the first
    # expected directory holding them), so editing a header regenerates.
    set(args "")
    set(deps ${RDMA_LAYOUT_TOOL} ${LT_DEPENDS})
    foreach(d ${incs})
      list(APPEND args --include ${d})
    endforeach()
    foreach(d ${expect})
      list(APPEND args --expect-dir ${d})
    endforeach()
    foreach(h ${hdrs})
      list(APPEND args --header ${h})
      foreach(d ${expect})
        if(EXISTS ${d}/${h})
          list(APPEND deps ${d}/${h})
          break()
        endif()
      endforeach()
    endforeach()

    set(symbol layout_${LT_NAME}_${side})
    string(MAKE_C_IDENTIFIER ${symbol} symbol)
    add_custom_command(
      OUTPUT ${dir}/${side}.c
      COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
      COMMAND ${Python3_EXECUTABLE} ${RDMA_LAYOUT_TOOL} table
              --clang ${RDMA_LAYOUT_CLANG} ${args}
              --symbol ${symbol} --output ${dir}/${side}.c
              --depfile ${dir}/${side}.d
      DEPENDS ${deps}
      DEPFILE ${dir}/${side}.d
      COMMENT "Generating ${side} layout table for ${LT_NAME}"
      VERBATIM)

    # Each table is its own translation unit: both sides define the same
    # struct tags.  Only the given include dirs apply, not the directory's.
    set(lib layout_${LT_NAME}_${side})
    add_library(${lib} OBJECT ${dir}/${side}.c)
    set_property(TARGET ${lib} PROPERTY INCLUDE_DIRECTORIES ${incs})
    set_property(TARGET ${lib} PROPERTY C_STANDARD 11)
    set_property(TARGET ${lib} PROPERTY C_EXTENSIONS ON)
    target_compile_options(${lib} PRIVATE -w)
    set(${side}_symbol ${symbol})
  endforeach()

  add_custom_command(
    OUTPUT ${dir}/driver.cc
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${Python3_EXECUTABLE} ${RDMA_LAYOUT_TOOL} driver
            --name ${LT_NAME} --ref-symbol ${ref_symbol} --our-symbol ${ours_symbol}
            --extras "${extras}" --output ${dir}/driver.cc
    DEPENDS ${RDMA_LAYOUT_TOOL}
    COMMENT "Generating layout comparison test for ${LT_NAME}"
    VERBATIM)

  set(exe layout_${LT_NAME}_test)
  add_executable(${exe} ${dir}/driver.cc
    $<TARGET_OBJECTS:layout_${LT_NAME}_ref> $<TARGET_OBJECTS:layout_${LT_NAME}_ours>)
  target_link_libraries(${exe} PRIVATE GTest::gtest_main)
  set_property(TARGET ${exe} PROPERTY RUNTIME_OUTPUT_DIRECTORY ${dir})
  # The extras file is read when the test runs, so editing it needs no rebuild.
  add_test(NAME layout.${LT_NAME} COMMAND ${exe})
endfunction()
