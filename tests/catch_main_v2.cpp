// Catch2 v2's main, compiled here: v2 is one header, so a cross build needs no Catch2 library built for
// its target (Debian's catch2 package is for the build machine's architecture only). v3 links
// Catch2::Catch2WithMain instead.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
