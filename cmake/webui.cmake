# webui.cmake — serve's web page (src/serve/webui/: HTML, CSS, JS; no Node
# toolchain) built into the `spillway` binary: cmake/webui_embed.cmake turns
# the files into a generated C file at build time, rebuilt when one changes.
set(SW_WEBUI_DIR ${CMAKE_SOURCE_DIR}/src/serve/webui)
file(GLOB SW_WEBUI_FILES CONFIGURE_DEPENDS ${SW_WEBUI_DIR}/*.html ${SW_WEBUI_DIR}/*.js
     ${SW_WEBUI_DIR}/*.css ${SW_WEBUI_DIR}/*.svg)
set(SW_WEBUI_C ${CMAKE_BINARY_DIR}/generated/webui_assets.c)
add_custom_command(
  OUTPUT ${SW_WEBUI_C}
  COMMAND ${CMAKE_COMMAND} -DDIR=${SW_WEBUI_DIR} -DOUT=${SW_WEBUI_C}
          -P ${CMAKE_SOURCE_DIR}/cmake/webui_embed.cmake
  DEPENDS ${SW_WEBUI_FILES} ${CMAKE_SOURCE_DIR}/cmake/webui_embed.cmake
  COMMENT "Embedding the web page (src/serve/webui)"
  VERBATIM)
target_sources(spillway_cli PRIVATE ${SW_WEBUI_C})
