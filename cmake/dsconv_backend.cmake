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

# dsconv_program(<name> <sources>...): an executable of the project for the backend.
function(dsconv_program name)
  add_executable(${name} ${ARGN})
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
