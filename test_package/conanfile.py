"""Builds a consumer of the created nsightkit package and runs it.

The consumer is told which mode the `disable` option selected and fails if the compiled code
disagrees (NSIGHTKIT_DISABLE did or did not reach it, NSIGHTKIT_COMPILED did not) or if the NVTX
events it records differ.
"""
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, cmake_layout


class NsightkitTestPackageConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps", "CMakeToolchain"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            options = self.dependencies["nsightkit"].options
            mode = "disabled" if options.disable else "enabled"
            exe = os.path.join(self.cpp.build.bindir, "test_package")
            self.run(f"{exe} {mode}", env="conanrun")
