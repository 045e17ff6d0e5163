# Install rules and the CMake package, so find_package(lucidq) works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS lucidq EXPORT lucidqTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# plot.hpp belongs to lucidq_plot (Cairo), which is not installed: its header stays out too.
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} PATTERN "plot.hpp" EXCLUDE)
install(DIRECTORY ${PROJECT_BINARY_DIR}/generated/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT lucidqTargets NAMESPACE lucidq:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lucidq)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lucidqConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
file(WRITE ${PROJECT_BINARY_DIR}/lucidqConfig.cmake
     "include(CMakeFindDependencyMacro)\nfind_dependency(OpenMP)\nfind_dependency(PkgConfig)\n"
     "pkg_check_modules(LUCIDQ_OPENBLAS REQUIRED IMPORTED_TARGET openblas)\n"
     "pkg_check_modules(LUCIDQ_LAPACKE REQUIRED IMPORTED_TARGET lapacke)\n"
     "include(\${CMAKE_CURRENT_LIST_DIR}/lucidqTargets.cmake)\n")
install(FILES ${PROJECT_BINARY_DIR}/lucidqConfig.cmake ${PROJECT_BINARY_DIR}/lucidqConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lucidq)
if(LUCIDQ_BUILD_TOOLS)
  install(TARGETS lucidq_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
