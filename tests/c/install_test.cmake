# Installs the build into a temporary prefix, then builds and runs a consumer project
# against it twice: with find_package(nxrt) and with pkg-config.
# Usage: cmake -DBUILD_DIR= -DWORK= -DCONSUMER= -DMODEL= -DLIBDIR= -DGENERATOR=
#              -DC_COMPILER= -DPKG_CONFIG= -P install_test.cmake
cmake_minimum_required(VERSION 3.20)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/nxrt/nxrt.h include/nxrt/nxrt.hpp ${LIBDIR}/libnxrt.so ${LIBDIR}/pkgconfig/nxrt.pc
          ${LIBDIR}/cmake/nxrt/nxrtConfig.cmake ${LIBDIR}/cmake/nxrt/nxrtConfigVersion.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install did not produce ${f}")
  endif()
endforeach()

# find_package
run(${CMAKE_COMMAND} -S ${CONSUMER} -B ${WORK}/consumer -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/consumer)
run(${WORK}/consumer/consumer_c ${MODEL})
if(NOT run_output MATCHES "input state sr")
  message(FATAL_ERROR "consumer_c printed: ${run_output}")
endif()
run(${WORK}/consumer/consumer_cpp ${MODEL})
if(NOT run_output MATCHES "2 outputs")
  message(FATAL_ERROR "consumer_cpp printed: ${run_output}")
endif()

# pkg-config (the .pc file locates the prefix relative to itself)
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig
    ${PKG_CONFIG} --cflags --libs nxrt)
separate_arguments(flags UNIX_COMMAND "${run_output}")
run(${C_COMPILER} -std=c11 -Wall -Wextra -Werror ${CONSUMER}/consumer.c ${flags} -o ${WORK}/pc_consumer)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/${LIBDIR} ${WORK}/pc_consumer ${MODEL})
if(NOT run_output MATCHES "input state sr")
  message(FATAL_ERROR "pkg-config consumer printed: ${run_output}")
endif()
message(STATUS "install + find_package + pkg-config: ok")
