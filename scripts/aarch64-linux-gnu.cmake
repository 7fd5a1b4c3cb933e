# CMake toolchain for ARM64 Linux with Debian's cross compiler and the arm64 development packages
# installed beside the host's own (multiarch: /usr/lib/aarch64-linux-gnu). scripts/cross-arm64.sh uses
# it; the programs it builds run under qemu-aarch64 (user mode), also for the build's own test listing.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries and pkg-config files of the target architecture only; headers of architecture-independent
# packages (nlohmann-json, CLI11, xsimd) are shared with the host.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# No -L: the arm64 C library comes from the multiarch packages, and pairing it with the cross
# toolchain's own loader (/usr/aarch64-linux-gnu) hangs in pthread_create.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
