# The report's advice rules (include/nsightkit/detail/report/advice.hpp) on synthetic record
# streams from a fake CUPTI source; the GPU programs that commit each mistake are in
# advice/test_advice_gpu.cu (label gpu).
nsightkit_add_test(test_advice SOURCES advice/test_advice.cpp NO_RECORDER)
if(TARGET nsightkit::cupti)
  nsightkit_add_gpu_test(test_advice_gpu SOURCES advice/test_advice_gpu.cu NO_RECORDER
    LIBRARIES nsightkit::cupti)
endif()
