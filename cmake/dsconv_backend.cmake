# Builds the project's own programs (tests, examples, benchmarks) for the chosen backend from
# the same sources:
#   host  any C++17 compiler; kernels run on the CPU
#   cuda  nvcc; CMAKE_CUDA_ARCHITECTURES (default 75;80;90)
#   hip   configure with CXX=hipcc; DSCONV_HIP_ARCHITECTURES (default gfx906;gfx90a).
#         CMake's HIP language does not find Debian's hip-lang package, so the sources stay
#         C++ and hipcc is told to compile them as HIP.
if(DSCONV_BACKEND STREQUAL "cuda")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 75 80 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
elseif(DSCONV_BACKEND STREQUAL "hip")
  set(DSCONV_HIP_ARCHITECTURES "gfx906;gfx90a" CACHE STRING "AMD GPU targets of the HIP build")
elseif(NOT DSCONV_BACKEND STREQUAL "host")
  message(FATAL_ERROR "DSCONV_BACKEND must be host, cuda or hip (got '${DSCONV_BACKEND}')")
endif()

# Warnings for the project's own code; -Werror only where it asks for it.
option(DSCONV_WERROR "Treat warnings in the project's own programs as errors" OFF)

# dsconv_compile_for_backend(<target> <sources>...): compiles the target's sources for the
# backend, with the project's warnings.
function(dsconv_compile_for_backend name)
  target_link_libraries(${name} PRIVATE dsconv::dsconv)
  if(DSCONV_BACKEND STREQUAL "cuda")
    set_source_files_properties(${ARGN} TARGET_DIRECTORY ${name} PROPERTIES LANGUAGE CUDA)
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall>)
  elseif(DSCONV_BACKEND STREQUAL "hip")
    set(offload "")
    foreach(arch IN LISTS DSCONV_HIP_ARCHITECTURES)
      list(APPEND offload --offload-arch=${arch})
    endforeach()
    target_compile_options(${name} PRIVATE -x hip ${offload} -Wall)
    target_link_options(${name} PRIVATE ${offload})
  else()
    target_compile_options(${name} PRIVATE -Wall -Wextra -Wpedantic)
    if(DSCONV_WERROR)
      target_compile_options(${name} PRIVATE -Werror)
    endif()
  endif()
endfunction()

# dsconv_kernels: every kernel of the library, compiled once for all of the project's programs
# (include/dsconv/instantiations.hpp): one source per operation and element type, generated
# from cmake/instantiate.cpp.in, so that the compiler builds them in parallel. An object
# library, so every program contains every kernel (the test suite's coverage check counts on
# it).
set(dsconv_instantiation_sources "")
foreach(operation depthwise pointwise inverted_residual)
  string(TOUPPER ${operation} DSCONV_OPERATION_MACRO)
  set(DSCONV_OPERATION ${operation})
  foreach(type float half bfloat16)
    if(type STREQUAL "float")
      set(DSCONV_TYPE float)
    else()
      set(DSCONV_TYPE ::dsconv::${type})
    endif()
    set(source ${PROJECT_BINARY_DIR}/instantiations/${operation}_${type}.cpp)
    configure_file(${PROJECT_SOURCE_DIR}/cmake/instantiate.cpp.in ${source} @ONLY)
    list(APPEND dsconv_instantiation_sources ${source})
  endforeach()
endforeach()
add_library(dsconv_kernels OBJECT ${dsconv_instantiation_sources})
dsconv_compile_for_backend(dsconv_kernels ${dsconv_instantiation_sources})
target_compile_definitions(dsconv_kernels PUBLIC DSCONV_EXTERN_TEMPLATES=1)
if(DSCONV_BACKEND STREQUAL "cuda")
  # Where nvcc keeps what it makes of the kernel sources (--keep), their PTX among it
  # (<operation>_<type>.ptx): for CI, whose resource step (scripts/kernel_resources.py
  # --cuda-ptx) compiles a build's compute_80 PTX for sm_80 and sm_90 with ptxas, where it had
  # compiled the same kernels again.
  set(DSCONV_CUDA_KEEP_PTX_DIR "" CACHE PATH "Keep nvcc's intermediate files of the kernel sources here (empty: none)")
  if(DSCONV_CUDA_KEEP_PTX_DIR)
    file(MAKE_DIRECTORY ${DSCONV_CUDA_KEEP_PTX_DIR})
    target_compile_options(dsconv_kernels PRIVATE --keep --keep-dir=${DSCONV_CUDA_KEEP_PTX_DIR})
  endif()
elseif(DSCONV_BACKEND STREQUAL "hip")
  # OFF: the kernels' host side only (hipcc --cuda-host-only, a tenth of their compile time),
  # whose objects name a device binary that is not there (__hip_fatbin, defined as 0 for the
  # link): the programs compile and link but cannot run. For CI, which runs nothing on a GPU
  # and whose resource step (scripts/kernel_resources.py) compiles every kernel's device code
  # for gfx906 and gfx90a.
  option(DSCONV_HIP_KERNEL_DEVICE_CODE "Compile the library kernels' device code in the HIP build" ON)
  if(NOT DSCONV_HIP_KERNEL_DEVICE_CODE)
    target_compile_options(dsconv_kernels PRIVATE --cuda-host-only)
    target_link_options(dsconv_kernels INTERFACE -Wl,--defsym=__hip_fatbin=0)
  endif()
endif()

# dsconv_program(<name> <sources>...): an executable of the project for the backend, linked
# with the kernels compiled once (dsconv_kernels).
function(dsconv_program name)
  add_executable(${name} ${ARGN})
  dsconv_compile_for_backend(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE dsconv_kernels)
endfunction()
