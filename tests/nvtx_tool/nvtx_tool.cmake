# The report as an NVTX tool (docs/nvtx-tool.md): in-process, through NVTX's static injection; the
# NVTX tool library under `nsightkit profile` is tested in tests/command/.
nsightkit_add_test(test_nvtx_tool SOURCES nvtx_tool/test_nvtx_tool.cpp NO_RECORDER)
