# `cmake --install build --prefix P`: the libraries, their headers, a CMake package (find_package(feeder)
# gives feeder::core, and feeder::torch when built with LibTorch) and feeder.pc for the core.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FEEDER_INSTALLED_TARGETS feeder_core feeder_train_common)
if(FEEDER_WITH_TORCH)
  list(APPEND FEEDER_INSTALLED_TARGETS feeder_torch)
endif()
install(TARGETS ${FEEDER_INSTALLED_TARGETS} EXPORT feederTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Headers of the LibTorch side only come with the library that implements them.
set(FEEDER_TORCH_HEADER_EXCLUDES)
if(NOT FEEDER_WITH_TORCH)
  set(FEEDER_TORCH_HEADER_EXCLUDES
      PATTERN torch EXCLUDE
      PATTERN simple_cnn.h EXCLUDE
      PATTERN trainer.h EXCLUDE
      PATTERN distributed.h EXCLUDE
      PATTERN checkpoint.h EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/feeder DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" ${FEEDER_TORCH_HEADER_EXCLUDES})

set(FEEDER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/feeder)
install(EXPORT feederTargets NAMESPACE feeder:: DESTINATION ${FEEDER_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/feederConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/feederConfig.cmake
                              INSTALL_DESTINATION ${FEEDER_CMAKE_DIR})
# 0.x: a minor version may change the interface, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/feederConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/feederConfig.cmake ${PROJECT_BINARY_DIR}/feederConfigVersion.cmake
        DESTINATION ${FEEDER_CMAKE_DIR})

# feeder.pc finds its prefix from its own place (${pcfiledir}), so `--prefix` at install time works.
file(RELATIVE_PATH FEEDER_PC_PREFIX_FROM_PCFILEDIR
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" FEEDER_PC_PREFIX_FROM_PCFILEDIR "${FEEDER_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/feeder.pc.in ${PROJECT_BINARY_DIR}/feeder.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/feeder.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
