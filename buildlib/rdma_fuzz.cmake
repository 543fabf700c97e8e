# Fuzzing (libFuzzer).
#
# rdma_fuzzer(NAME n SOURCES src... [LIBS lib...] CORPUS dir [NO_REPLAY])
#   src defines LLVMFuzzerTestOneInput. In the normal build this makes
#   fuzz_replay_<n> (src + buildlib/fuzz_replay.cpp) and the test
#   unit.fuzz_<n>_corpus, which runs every file of the corpus through the
#   entry point: the corpus is a regression suite even without clang.
#   In a build configured with -DRDMA_FUZZ=ON (clang; buildlib/fuzz-run
#   makes one in build-fuzz/) it makes the libFuzzer program fuzz_<n>,
#   instrumented with ASan and UBSan, part of the `fuzzers` target, and
#   lists it in fuzzers.txt for the runner. NO_REPLAY: the component
#   replays the corpus with a test of its own (with stronger checks).
option(RDMA_FUZZ "build the libFuzzer programs (needs clang)" OFF)

if(RDMA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "RDMA_FUZZ needs clang (CC=clang CXX=clang++)")
  endif()
  # -fno-sanitize=enum: the C API takes enums (MAD_FIELDS...) that C
  # callers fill with any int; the libraries range-check them instead.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-sanitize=enum
                      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined -fno-sanitize=enum)
  add_custom_target(fuzzers)
  set_property(GLOBAL PROPERTY RDMA_FUZZERS "")
endif()

function(rdma_fuzzer)
  cmake_parse_arguments(F "NO_REPLAY" "NAME;CORPUS" "SOURCES;LIBS" ${ARGN})
  get_filename_component(corpus ${F_CORPUS} ABSOLUTE)
  if(RDMA_FUZZ)
    add_executable(fuzz_${F_NAME} ${F_SOURCES})
    target_link_libraries(fuzz_${F_NAME} PRIVATE ${F_LIBS})
    target_link_options(fuzz_${F_NAME} PRIVATE -fsanitize=fuzzer)
    add_dependencies(fuzzers fuzz_${F_NAME})
    set_property(GLOBAL APPEND PROPERTY RDMA_FUZZERS
      "${F_NAME}\t$<TARGET_FILE:fuzz_${F_NAME}>\t${corpus}")
  elseif(NOT F_NO_REPLAY)
    add_executable(fuzz_replay_${F_NAME} ${F_SOURCES} ${PROJECT_SOURCE_DIR}/buildlib/fuzz_replay.cpp)
    target_link_libraries(fuzz_replay_${F_NAME} PRIVATE ${F_LIBS})
    add_test(NAME unit.fuzz_${F_NAME}_corpus COMMAND fuzz_replay_${F_NAME} ${corpus})
  endif()
endfunction()

# Called once at the end of the top-level CMakeLists: writes the list of
# fuzzers (name, program, corpus) that buildlib/fuzz-run reads.
function(rdma_fuzz_finish)
  if(NOT RDMA_FUZZ)
    return()
  endif()
  get_property(list GLOBAL PROPERTY RDMA_FUZZERS)
  string(REPLACE ";" "\n" text "${list}")
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/fuzzers.txt CONTENT "${text}\n")
endfunction()
