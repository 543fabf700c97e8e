# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The SA, performance, vendor and congestion-control tools: saquery,
# perfquery, ibtracert, ibping, ibsysstat, vendstat, ibccquery, ibccconfig.
# Included by infiniband-diags/CMakeLists.txt.
foreach(tool saquery perfquery ibtracert ibping ibsysstat vendstat ibccquery ibccconfig)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${tool}.cpp)
    rdma_sbin_executable(${tool} ${tool}.cpp)
    target_link_libraries(${tool} PRIVATE ibdiags_common ibmad ibumad)
  endif()
endforeach()

set(sa_tools_pages)
foreach(page saquery perfquery ibtracert ibping ibsysstat vendstat ibccquery ibccconfig)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/man/${page}.8.md)
    list(APPEND sa_tools_pages man/${page}.8.md)
  endif()
endforeach()
if(sa_tools_pages)
  rdma_man_pages(${sa_tools_pages})
endif()

# Ours against the reference on simulated fabrics (tests/compare-sa.sh).
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-sa.sh)
  rdma_fabric_test(NAME sa_tools.net2sw COMMAND
    ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-sa.sh TIMEOUT 900)
  rdma_fabric_test(NAME sa_tools.net2sw_sm SM COMMAND
    ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-sa.sh TIMEOUT 1800)
endif()

# The same on a generated two-level fat tree (48 hosts, 12 switches).
set(sa_fattree ${CMAKE_CURRENT_BINARY_DIR}/sa-fattree-8x4x6.topo)
execute_process(COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/fabric/topo/gen-fattree.py
                        --leaves 8 --spines 4 --hosts 6
                OUTPUT_FILE ${sa_fattree} RESULT_VARIABLE sa_fattree_rc)
if(sa_fattree_rc EQUAL 0 AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/tests/cases-sa-fattree.txt)
  rdma_fabric_test(NAME sa_tools.fattree_sm SM TOPO ${sa_fattree} TIMEOUT 900 COMMAND
    ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-sa.sh
    ${CMAKE_CURRENT_SOURCE_DIR}/tests/cases-sa-fattree.txt)
endif()
