#pragma once

#define DSCONV_VERSION_MAJOR 0
#define DSCONV_VERSION_MINOR 1
#define DSCONV_VERSION_PATCH 0
// One integer that orders releases: major * 10000 + minor * 100 + patch.
#define DSCONV_VERSION (DSCONV_VERSION_MAJOR * 10000 + DSCONV_VERSION_MINOR * 100 + DSCONV_VERSION_PATCH)

namespace dsconv {
inline constexpr int version_major = DSCONV_VERSION_MAJOR;
inline constexpr int version_minor = DSCONV_VERSION_MINOR;
inline constexpr int version_patch = DSCONV_VERSION_PATCH;
}  // namespace dsconv
