# Installs the headers and a CMake package, so that consumers can write
#   find_package(dsconv CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE dsconv::dsconv)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/dsconv DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS dsconv EXPORT dsconvTargets)
install(EXPORT dsconvTargets NAMESPACE dsconv:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dsconv)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dsconvConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/dsconvConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dsconv)
# Header-only: the package fits any architecture.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dsconvConfigVersion.cmake COMPATIBILITY SameMinorVersion
                                 ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/dsconvConfig.cmake ${PROJECT_BINARY_DIR}/dsconvConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dsconv)
