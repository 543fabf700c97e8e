# Kernel tests: commands that need real /dev/infiniband devices and run in
# the soft-RoCE VM of tests/vm. The VM boots once per ctest run:
#
#   vm.boot         FIXTURES_SETUP rdma_vm: boots, runs every kernel test
#                   inside (each with its own timeout), stores
#                   build/vm-results/<name>.log and <name>.rc
#   vm.<name>       FIXTURES_REQUIRED rdma_vm: prints the stored log, exits
#                   with the stored status (77 = skipped)
#
# rdma_vm_test(NAME <name> COMMAND <cmd> [args...]
#              [TIMEOUT <seconds>]          default 120
#              [WORKING_DIRECTORY <dir>]    default CMAKE_CURRENT_BINARY_DIR
#              [ENV VAR=value...]
#              [DEVICES 1|2]                2: also rxe1 (on veth0); the VM
#                                           boots with the most any test asks
#              [LANE <lane>])               default main; lanes run side by
#                                           side, "exclusive" runs alone at
#                                           the end (tests/vm/ctest-run-all)
# Like add_test, a COMMAND starting with an executable target name runs that
# target's file, and generator expressions are allowed in the arguments.
# Callable from any CMakeLists.txt; the manifest and vm.boot are written once
# the top-level directory has been processed, so calls may come in any order.
# Directories read before tests/ (libibverbs/tests...) include this file
# themselves; including it again is harmless.
include_guard(GLOBAL)

# Paths are computed inside the functions: they run in the callers' scopes
# (and _rdma_vm_finish in the top-level one), where variables set here at
# include time are not visible.
macro(_rdma_vm_paths)
  get_filename_component(RDMA_VM_DIR ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../tests/vm ABSOLUTE)
  set(RDMA_VM_RESULTS ${CMAKE_BINARY_DIR}/vm-results)
  set(RDMA_VM_MANIFEST ${CMAKE_BINARY_DIR}/vm-tests.manifest)
endmacro()

# Single-quoted for bash: ' becomes '\''.
function(_rdma_vm_quote out arg)
  string(REPLACE "'" "'\\''" arg "${arg}")
  set(${out} " '${arg}'" PARENT_SCOPE)
endfunction()

function(rdma_vm_test)
  _rdma_vm_paths()
  # Arguments are read one by one from ARGV<n> rather than through
  # cmake_parse_arguments: a command like sh -c "a; b" must reach the VM
  # with its semicolons, which CMake lists would split on.
  set(key "")
  set(exe "")
  set(qargs "")
  set(qenv "")
  math(EXPR last "${ARGC} - 1")
  foreach(i RANGE 0 ${last})
    set(arg "${ARGV${i}}")
    if(arg MATCHES "^(NAME|COMMAND|TIMEOUT|WORKING_DIRECTORY|ENV|DEVICES|LANE)$")
      set(key ${arg})
    elseif(key STREQUAL "COMMAND" AND exe STREQUAL "")
      set(exe "${arg}")
    elseif(key STREQUAL "COMMAND")
      _rdma_vm_quote(q "${arg}")
      string(APPEND qargs "${q}")
    elseif(key STREQUAL "ENV")
      _rdma_vm_quote(q "${arg}")
      string(APPEND qenv "${q}")
    elseif(key MATCHES "^(NAME|TIMEOUT|WORKING_DIRECTORY|DEVICES|LANE)$")
      set(T_${key} "${arg}")
      set(key "")
    else()
      message(FATAL_ERROR "rdma_vm_test: unexpected argument '${arg}'")
    endif()
  endforeach()
  if(NOT T_NAME OR exe STREQUAL "")
    message(FATAL_ERROR "rdma_vm_test: NAME and COMMAND are required")
  endif()
  if(NOT T_NAME MATCHES "^[A-Za-z0-9_.+-]+$")
    message(FATAL_ERROR "rdma_vm_test: '${T_NAME}' is not usable as a file name")
  endif()
  get_property(names GLOBAL PROPERTY RDMA_VM_TEST_NAMES)
  if(T_NAME IN_LIST names)
    message(FATAL_ERROR "rdma_vm_test: '${T_NAME}' is defined twice")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(NOT T_WORKING_DIRECTORY)
    set(T_WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  if(NOT T_DEVICES)
    set(T_DEVICES 1)
  endif()
  if(NOT T_LANE)
    set(T_LANE main)
  endif()
  if(NOT T_LANE MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "rdma_vm_test: lane '${T_LANE}' is not a plain word")
  endif()

  # Kept in global properties; the manifest is written by _rdma_vm_finish
  # once all directories have been read, when a target named by the first
  # word of COMMAND surely exists.
  set_property(GLOBAL APPEND PROPERTY RDMA_VM_TEST_NAMES ${T_NAME})
  set_property(GLOBAL PROPERTY RDMA_VM_TEST_${T_NAME}_EXE "${exe}")
  set_property(GLOBAL PROPERTY RDMA_VM_TEST_${T_NAME}_QARGS "${qargs}")
  set_property(GLOBAL PROPERTY RDMA_VM_TEST_${T_NAME}_QENV "${qenv}")
  set_property(GLOBAL PROPERTY RDMA_VM_TEST_${T_NAME}_TIMEOUT ${T_TIMEOUT})
  set_property(GLOBAL PROPERTY RDMA_VM_TEST_${T_NAME}_DIR "${T_WORKING_DIRECTORY}")
  set_property(GLOBAL PROPERTY RDMA_VM_TEST_${T_NAME}_DEVICES ${T_DEVICES})
  set_property(GLOBAL PROPERTY RDMA_VM_TEST_${T_NAME}_LANE ${T_LANE})

  add_test(NAME vm.${T_NAME}
    COMMAND ${RDMA_VM_DIR}/ctest-result ${RDMA_VM_RESULTS} ${T_NAME})
  set_tests_properties(vm.${T_NAME} PROPERTIES
    FIXTURES_REQUIRED rdma_vm
    SKIP_RETURN_CODE 77
    LABELS vm)
endfunction()

function(_rdma_vm_finish)
  _rdma_vm_paths()
  get_property(names GLOBAL PROPERTY RDMA_VM_TEST_NAMES)
  set(manifest "# Generated by buildlib/rdma_vm.cmake; run by tests/vm/ctest-run-all.\n")
  set(devices 1)
  set(budget 120) # boot, power-off and slack
  foreach(name IN LISTS names)
    get_property(exe GLOBAL PROPERTY RDMA_VM_TEST_${name}_EXE)
    get_property(qargs GLOBAL PROPERTY RDMA_VM_TEST_${name}_QARGS)
    get_property(qenv GLOBAL PROPERTY RDMA_VM_TEST_${name}_QENV)
    get_property(timeout GLOBAL PROPERTY RDMA_VM_TEST_${name}_TIMEOUT)
    get_property(dir GLOBAL PROPERTY RDMA_VM_TEST_${name}_DIR)
    get_property(dev GLOBAL PROPERTY RDMA_VM_TEST_${name}_DEVICES)
    get_property(lane GLOBAL PROPERTY RDMA_VM_TEST_${name}_LANE)
    if(TARGET "${exe}")
      get_target_property(type ${exe} TYPE)
      if(type STREQUAL "EXECUTABLE")
        set(exe "$<TARGET_FILE:${exe}>")
      endif()
    endif()
    _rdma_vm_quote(qname "${name}")
    _rdma_vm_quote(qdir "${dir}")
    _rdma_vm_quote(qexe "${exe}")
    string(APPEND manifest "vm_test --lane ${lane}${qname} ${timeout}${qdir}${qenv} --${qexe}${qargs}\n")
    if(dev GREATER devices)
      set(devices ${dev})
    endif()
    math(EXPR budget "${budget} + ${timeout} + 5")
  endforeach()
  file(GENERATE OUTPUT ${RDMA_VM_MANIFEST} CONTENT "${manifest}")

  if(NOT names)
    return()
  endif()
  # The VM shares the source tree and the build tree read-write (results,
  # test scratch files); the build tree may live outside the source tree.
  add_test(NAME vm.boot
    COMMAND ${CMAKE_COMMAND} -E env
      RDMA_VM_DEVICES=${devices}
      RDMA_VM_TIMEOUT=${budget}
      "RDMA_VM_RW=${CMAKE_SOURCE_DIR}:${CMAKE_BINARY_DIR}"
      ${RDMA_VM_DIR}/ctest-boot ${RDMA_VM_MANIFEST} ${RDMA_VM_RESULTS}
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  math(EXPR ctest_timeout "${budget} + 60")
  set_tests_properties(vm.boot PROPERTIES
    FIXTURES_SETUP rdma_vm
    TIMEOUT ${ctest_timeout}
    LABELS vm)
endfunction()

cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _rdma_vm_finish)
