// Internal: how an NVTX tool takes a module's calls. NVTX hands a tool (its injection entry
// point) the module's export table; the tool writes its callbacks into the module's function
// tables, one per callback module (core, core2, CUDA, CUDA runtime, ...). Used by the report's
// NVTX tool and by the testing Recorder, in enabled and disabled builds alike.
#pragma once

#include <nsightkit/config.hpp>

#include <nvtx3/nvToolsExt.h>

#include <type_traits>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// One module's NVTX function tables, as its export table gives them.
class NvtxModuleTables {
 public:
  /// The tables of the module whose export table `get` reads (none when `get` is null).
  explicit NvtxModuleTables(NvtxGetExportTableFunc_t get) noexcept {
    if (get != nullptr) {
      callbacks_ = static_cast<NvtxExportTableCallbacks const*>(get(NVTX_ETID_CALLBACKS));
    }
    if (callbacks_ != nullptr && callbacks_->GetModuleFunctionTable == nullptr)
      callbacks_ = nullptr;
  }

  /// False when the module gave no tables (an NVTX too old or broken): the tool declines it.
  [[nodiscard]] bool valid() const noexcept { return callbacks_ != nullptr; }

  /// Writes `fn` into slot `cbid` of callback module `module`, where the module has that slot.
  template <class Fn>
  void install(NvtxCallbackModule module, unsigned int cbid, Fn fn) const noexcept {
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (callbacks_ == nullptr || callbacks_->GetModuleFunctionTable(module, &table, &size) == 0)
      return;
    if (table != nullptr && cbid < size && table[cbid] != nullptr) {
      *table[cbid] = reinterpret_cast<NvtxFunctionPointer>(fn);
    }
  }

 private:
  NvtxExportTableCallbacks const* callbacks_{nullptr};
};

/// Event attributes carrying only a message: what NVTX's calls without attributes mean
/// (nvtxRangePushA, nvtxMarkW, ...), for a tool that handles every call in its attributes form.
template <class Char>
inline nvtxEventAttributes_t nvtx_message_only(Char const* m) noexcept {
  static_assert(std::is_same_v<Char, char> || std::is_same_v<Char, wchar_t>);
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  if constexpr (std::is_same_v<Char, char>) {
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = m;
  } else {
    a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    a.message.unicode = m;
  }
  return a;
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
