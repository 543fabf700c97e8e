# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The RPC half of libibmad.so.5: MAD building, request/response with
# retries and timeouts, ports and class agents, address resolution and the
# per-class helpers (SMP, SA, PMA, vendor, BM, CC). libibmad/CMakeLists.txt
# includes this file and builds target ibmad from both halves.
set(IBMAD_RPC_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/bm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cc.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mad.cpp
  ${CMAKE_CURRENT_LIST_DIR}/portid.cpp
  ${CMAKE_CURRENT_LIST_DIR}/register.cpp
  ${CMAKE_CURRENT_LIST_DIR}/resolve.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rpc.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sa.cpp
  ${CMAKE_CURRENT_LIST_DIR}/serv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/smp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vendor.cpp
)

# libibmad/CMakeLists.txt links the RPC half's needs: our libibumad and
# dlsym() for the libibumad 1.4 calls.
