# Included after each project() call of the llama.cpp build (CMAKE_PROJECT_INCLUDE, set by
# tests/peers/setup.sh). setup.sh builds the C++ unoptimised (-O0) and as unity units, which cuts
# the cold build roughly in half on 2 cores; once, at the end of the top directory, this file:
#   - compiles the ggml targets, where the kernels and ops run, at -O2 again (their C is -O3):
#     the tokens/s of the test model stay what a Release build gives;
#   - keeps ggml's files one unit each (ggml-cpu redefines a static helper per file);
#   - leaves mtmd's helper files out of the unity units (they refuse mtmd's internal headers).
if(NOT LLM_DOCTOR_BUILD_TWEAKS)
  set(LLM_DOCTOR_BUILD_TWEAKS ON)
  function(llm_doctor_build_tweaks)
    foreach(target ggml-base ggml-cpu)
      if(TARGET ${target})
        set_target_properties(${target} PROPERTIES UNITY_BUILD OFF)
        target_compile_options(${target} PRIVATE -O2)
      endif()
    endforeach()
    if(TARGET mtmd)
      get_target_property(sources mtmd SOURCES)
      get_target_property(dir mtmd SOURCE_DIR)
      foreach(source ${sources})
        if(source MATCHES "mtmd-helper")
          if(NOT IS_ABSOLUTE "${source}")
            set(source "${dir}/${source}")
          endif()
          set_source_files_properties(${source} DIRECTORY ${dir} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
        endif()
      endforeach()
    endif()
  endfunction()
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL llm_doctor_build_tweaks)
endif()
