# <torch/torch.h> precompiled once and reused: parsing it costs about 20 s of each translation unit
# that includes it, and some twenty do (the adapter and trainer, two of the CLI's commands, the
# torch tests, the LibTorch benches and examples). feeder_torch compiles the header; every other
# target that links LibTorch reuses that one precompiled header, so the header is parsed once per
# build instead of once per file. A file of those targets that does not include LibTorch is left
# out (SKIP_PRECOMPILE_HEADERS): the header would only slow it down and hide a missing include.
# FEEDER_TORCH_PCH=OFF builds without it (the result is the same program).
option(FEEDER_TORCH_PCH "Precompile <torch/torch.h> once for the targets that include it" ON)
if(NOT (FEEDER_WITH_TORCH AND FEEDER_TORCH_PCH AND TARGET feeder_torch))
  return()
endif()

# Whether a source file includes LibTorch, directly or through one of the project's headers that do.
set(feeder_torch_include_regex
    "#include [<\"](torch/|ATen/|c10/|feeder/torch/|feeder/train/(trainer|simple_cnn|checkpoint|distributed)\\.h|mnist_net\\.h|ablation/(sources|naive_dataset)\\.h|torch/libtorch_compat\\.h|train/detail/error_text\\.h)")

target_precompile_headers(feeder_torch PRIVATE <torch/torch.h>)

# The executables compile as position-independent executables (-fPIE) and the library as
# position-independent code (-fPIC); GCC refuses a precompiled header made with the other flag, so
# the consumers compile their LibTorch files with -fPIC, which serves an executable as well.
foreach(target feeder feeder-bench feeder-dist-bench feeder-mnist-example-bench feeder_torch_tests
               train_own_model train_parquet augment_transform)
  if(NOT TARGET ${target})
    continue()
  endif()
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(sources ${target} SOURCES)
  set(uses_torch OFF)
  foreach(source ${sources})
    if(NOT IS_ABSOLUTE "${source}")
      set(source "${source_dir}/${source}")
    endif()
    file(STRINGS "${source}" torch_includes REGEX "${feeder_torch_include_regex}")
    if(torch_includes)
      set(uses_torch ON)
      set_source_files_properties("${source}" TARGET_DIRECTORY ${target} PROPERTIES COMPILE_OPTIONS -fPIC)
    else()
      set_source_files_properties("${source}" TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
  if(uses_torch)
    target_precompile_headers(${target} REUSE_FROM feeder_torch)
  endif()
endforeach()
