# Included after each project() call of the llama.cpp build (CMAKE_PROJECT_INCLUDE, set by
# tests/peers/setup.sh, which builds with CMAKE_UNITY_BUILD=ON to compile fewer, larger units).
# Three targets do not compile as unity units (ggml-cpu redefines a static helper per file; mtmd's
# helper refuses internal headers): once, at the end of the top directory, they go back to one
# unit per file.
if(NOT LLM_DOCTOR_UNITY_EXCEPTIONS)
  set(LLM_DOCTOR_UNITY_EXCEPTIONS ON)
  function(llm_doctor_no_unity)
    foreach(target ggml-base ggml-cpu mtmd)
      if(TARGET ${target})
        set_target_properties(${target} PROPERTIES UNITY_BUILD OFF)
      endif()
    endforeach()
  endfunction()
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL llm_doctor_no_unity)
endif()
