# rsockets (part of librdmacm.so.1) and librspreload, the LD_PRELOAD library
# that runs unmodified sockets programs over rsockets. Included by
# CMakeLists.txt before the rdmacm target exists.

# Where administrators put rsocket defaults (rsocket(7)); the reference
# reads ${sysconfdir}/rdma/rsocket.
set(RSOCKET_CONF_DIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}/rdma/rsocket"
  CACHE PATH "directory of the rsocket configuration files")

set(RDMACM_RSOCKET_SOURCES
  rsocket.cpp
  rsocket_config.cpp
  rsocket_stream.cpp
  rsocket_dgram.cpp
  rsocket_poll.cpp)
set_source_files_properties(${RDMACM_RSOCKET_SOURCES} PROPERTIES
  COMPILE_DEFINITIONS "RSOCKET_CONF_DIR=\"${RSOCKET_CONF_DIR}\"")

# Called once the rdmacm target exists.
function(rdmacm_rsocket_targets)
  # Debian installs the module as <libdir>/rsocket/librspreload.so with no
  # SONAME, plus librspreload.so.1 and .so.1.0.0 links for old packaging.
  add_library(rspreload MODULE preload.cpp)
  set_target_properties(rspreload PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib/rsocket
    PREFIX "lib"
    LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/librspreload.map)
  target_compile_definitions(rspreload PRIVATE
    "RSOCKET_CONF_DIR=\"${RSOCKET_CONF_DIR}\"")
  target_include_directories(rspreload PRIVATE ${CMAKE_SOURCE_DIR})
  target_link_options(rspreload PRIVATE
    "LINKER:--version-script=${CMAKE_CURRENT_SOURCE_DIR}/librspreload.map"
    "LINKER:--no-undefined" "LINKER:-z,defs")
  target_link_libraries(rspreload PRIVATE rdmacm Threads::Threads ${CMAKE_DL_LIBS})
  add_custom_command(TARGET rspreload POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E create_symlink librspreload.so librspreload.so.1
    COMMAND ${CMAKE_COMMAND} -E create_symlink librspreload.so librspreload.so.1.0.0
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/lib/rsocket
    VERBATIM)
  install(TARGETS rspreload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/rsocket)
  install(CODE "
    file(MAKE_DIRECTORY \"\$ENV{DESTDIR}${CMAKE_INSTALL_FULL_LIBDIR}/rsocket\")
    foreach(link librspreload.so.1 librspreload.so.1.0.0)
      execute_process(COMMAND \${CMAKE_COMMAND} -E create_symlink librspreload.so
        \"\$ENV{DESTDIR}${CMAKE_INSTALL_FULL_LIBDIR}/rsocket/\${link}\")
    endforeach()")
endfunction()
