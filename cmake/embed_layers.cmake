# Generates a header that holds the layer tables of data/layers/*.csv as string constants,
# so programs carry the tables without reading files at run time.
#   dsconv_embed_layers(<target>): adds the generated directory to <target>'s include path;
#   the header is <dsconv_layer_tables.hpp>.
function(dsconv_embed_layers target)
  set(out_dir ${CMAKE_BINARY_DIR}/generated)
  set(header ${out_dir}/dsconv_layer_tables.hpp)
  file(GLOB tables CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/data/layers/*.csv)
  set(text "#pragma once\n// Generated from data/layers/*.csv by cmake/embed_layers.cmake. Do not edit.\n\n")
  string(APPEND text "namespace dsconv_layers_data {\nstruct table { const char* name; const char* csv; };\n")
  string(APPEND text "inline constexpr table tables[] = {\n")
  foreach(csv IN LISTS tables)
    get_filename_component(name ${csv} NAME_WE)
    file(READ ${csv} content)
    string(APPEND text "    {\"${name}\", R\"dsconv_csv(${content})dsconv_csv\"},\n")
  endforeach()
  string(APPEND text "};\n}  // namespace dsconv_layers_data\n")
  # configure_file only rewrites the header when its text changed: no needless rebuilds.
  file(WRITE ${out_dir}/dsconv_layer_tables.hpp.in "${text}")
  configure_file(${out_dir}/dsconv_layer_tables.hpp.in ${header} COPYONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${tables})
  target_include_directories(${target} PRIVATE ${out_dir})
endfunction()
