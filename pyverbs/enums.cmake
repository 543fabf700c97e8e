# pyverbs/enums.cmake: the generated enum modules (pyverbs.libibverbs_enums, pyverbs.librdmacm_enums) and their old names; pyverbs_enum_module() also makes the providers' (providers/*/CMakeLists.txt).
#
# gen_enums.py writes one C++ source per module into the build tree from
# enums.list and the public headers it is given; the compiler supplies the
# values. The sources depend on the list, the headers and the generator, so
# an edit to any of them regenerates and rebuilds the module.

set(PYVERBS_GEN_ENUMS ${CMAKE_CURRENT_SOURCE_DIR}/gen_enums.py)
set(PYVERBS_ENUMS_LIST ${CMAKE_CURRENT_SOURCE_DIR}/enums.list)

# pyverbs_enum_module(NAME [SUBDIR dir] HEADERS h... [LINK target...]): the
# headers are parsed for names and included by the generated source, in this
# order. With SUBDIR (providers/mlx5) the module is pyverbs.providers.mlx5.NAME
# and its section of enums.list [providers.mlx5.NAME]; the headers must be
# where a user includes them from (under an include directory: the build
# tree's copies of a provider's headers).
function(pyverbs_enum_module name)
  cmake_parse_arguments(PE "" "SUBDIR" "HEADERS;LINK" ${ARGN})
  set(section ${name})
  set(target pyverbs_${name})
  set(subdir)
  if(PE_SUBDIR)
    string(REPLACE "/" "." dotted ${PE_SUBDIR})
    string(REPLACE "/" "_" tag ${PE_SUBDIR})
    set(section ${dotted}.${name})
    set(target pyverbs_${tag}_${name})
    set(subdir SUBDIR ${PE_SUBDIR})
  endif()
  string(REPLACE "." "_" stem ${section})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${stem}.cpp)
  add_custom_command(OUTPUT ${out}
    COMMAND ${Python_EXECUTABLE} ${PYVERBS_GEN_ENUMS} --list ${PYVERBS_ENUMS_LIST}
            --module ${section} --output ${out} ${PE_HEADERS}
    DEPENDS ${PYVERBS_GEN_ENUMS} ${PYVERBS_ENUMS_LIST} ${PE_HEADERS}
    COMMENT "Generating pyverbs.${section} from enums.list"
    VERBATIM)
  pyverbs_module(${name} ${subdir} ${out})
  if(PE_LINK)
    target_link_libraries(${target} PRIVATE ${PE_LINK})
  endif()
endfunction()

set(ibv_include ${CMAKE_SOURCE_DIR}/libibverbs/include/infiniband)
pyverbs_enum_module(libibverbs_enums HEADERS
  ${ibv_include}/verbs.h ${ibv_include}/verbs_api.h ${ibv_include}/tm_types.h)
pyverbs_enum_module(librdmacm_enums
  HEADERS ${CMAKE_SOURCE_DIR}/librdmacm/include/rdma/rdma_cma.h
  LINK rdmacm_headers)

# The names these modules had before upstream renamed them.
pyverbs_python(enums.py cm_enums.py)
