# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The local-port and SMP tools: ibstat, ibaddr, smpquery, smpdump, sminfo,
# ibportstate, ibroute, dump_fts; ibstatus is a shell script.
foreach(tool ibstat ibaddr smpquery smpdump sminfo ibportstate ibroute)
  rdma_sbin_executable(${tool} ${tool}.cpp)
  target_link_libraries(${tool} PRIVATE ibdiags_common)
endforeach()
rdma_sbin_executable(dump_fts dump_fts.cpp)
target_link_libraries(dump_fts PRIVATE ibdiags_common ibnetdisc)

# ibstatus: into build/bin like the programs, installed to sbin.
configure_file(ibstatus ${CMAKE_BINARY_DIR}/bin/ibstatus COPYONLY)
install(PROGRAMS ibstatus DESTINATION ${CMAKE_INSTALL_SBINDIR})

rdma_man_pages(
  man/infiniband-diags.8.md
  man/ibstat.8.md
  man/ibstatus.8.md
  man/ibaddr.8.md
  man/smpquery.8.md
  man/smpdump.8.md
  man/sminfo.8.md
  man/ibportstate.8.md
  man/ibroute.8.md
  man/dump_fts.8.md)

# Differential tests against Debian's tools (see tests/compare-smp.sh):
# the switch-first example fabric without and with a subnet manager, a
# two-port-HCA fabric, and a fabric whose local node is a CA.
set(_smp_cmp ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-smp.sh
  ${CMAKE_CURRENT_SOURCE_DIR}/tests/cases-smp.txt)
# The tool/library cross variants (ours-deb, ref-ours) run on the example
# fabric with an SM only (it has every case but three nosm: ones); on the
# others our tools on our libraries are compared with the reference
# (RDMA_TEST_FULL=1, buildlib/dev test --full: all variants everywhere).
set(_smp_ours env SMP_VARIANTS=ours ${_smp_cmp})
rdma_fabric_test(NAME diags_smp TIMEOUT 900 COMMAND ${_smp_ours})
rdma_fabric_test(NAME diags_smp_sm SM TIMEOUT 900 COMMAND ${_smp_cmp})
rdma_fabric_test(NAME diags_smp_2port SM TOPO net.2sw2path4hca2port
  TIMEOUT 900 COMMAND ${_smp_ours})
rdma_fabric_test(NAME diags_smp_hcafirst SM
  TOPO ${CMAKE_CURRENT_SOURCE_DIR}/tests/smp-hcafirst.topo
  TIMEOUT 900 COMMAND ${_smp_ours})
rdma_fabric_test(NAME diags_smp_fattree SM
  TOPO ${CMAKE_CURRENT_SOURCE_DIR}/tests/smp-fattree.topo TIMEOUT 600
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-smp.sh
  ${CMAKE_CURRENT_SOURCE_DIR}/tests/cases-smp-fattree.txt)
rdma_fabric_test(NAME diags_smp_faults SM TIMEOUT 600 COMMAND
  ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-smp.sh
  ${CMAKE_CURRENT_SOURCE_DIR}/tests/cases-smp-faults.txt)
add_test(NAME diags.ibstatus
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-ibstatus.sh
          ${CMAKE_CURRENT_SOURCE_DIR}/ibstatus)

# Unit tests of the shared code (no fabric).
if(GTest_FOUND)
  add_executable(smp_common_unit tests/smp_common_unit.cpp)
  target_link_libraries(smp_common_unit PRIVATE ibdiags_common GTest::gtest_main)
  add_test(NAME unit.diags_common COMMAND smp_common_unit)
endif()
