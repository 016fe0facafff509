"""An NVTX range per PyTorch module call: the Python counterpart of the C++ ModuleScope.

Each module's range is named by its own name (the last component of its qualified name) in
nsightkit's domain, as ModuleScope names it (docs/module-hooks.md, "Names and paths"): nesting
makes the path, so the report's row of a module called from its parent's forward is its qualified
name with '/' (`backbone/layer1/0/conv1`), and ncu's --nvtx-include takes the same path. The ranges
come from per-module forward pre/post hooks; torch itself is never imported here (the model's own
methods are used), so `import nsightkit` works without torch.
"""

import inspect

from . import ranges


class ModuleRanges:
    """What instrument() installed. remove() takes every hook away; so does leaving a `with` block.

    `paths` lists the report paths of the instrumented modules, in named_modules() order; `active`
    says whether hooks are installed (none when no NVTX tool listens). The hook handles are kept in
    one list, so hooks added for other passes later come off with the same remove().
    """

    def __init__(self, paths, handles):
        self.paths = tuple(paths)
        self._handles = list(handles)

    @property
    def active(self):
        return bool(self._handles)

    def remove(self):
        while self._handles:
            self._handles.pop().remove()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.remove()
        return False

    def __repr__(self):
        state = f"{len(self._handles)} hooks" if self._handles else "no hooks"
        return f"<nsightkit.ModuleRanges: {len(self.paths)} modules, {state}>"


def _range_hooks(push, pop, attributes):
    def pre(_module, _args):
        push(attributes)

    def post(_module, _args, _output):
        pop()

    return pre, post


def _module_hooks(push, pop, chain, backward, parts):
    # The forward ranges (none for an unnamed model: chain is empty) and, with `backward`, the
    # bookkeeping that gives the call's autograd nodes to the module.
    attributes = chain[-1] if chain else None
    if len(chain) > 1:  # the ranges of never-called containers first, then the module's own
        push_one, pop_one = push, pop

        def push(_attributes):
            for a in chain:
                push_one(a)

        def pop():
            for _ in chain:
                pop_one()

    if backward is None:
        return _range_hooks(push, pop, attributes)
    enter, leave = backward.enter, backward.leave
    if attributes is None:

        def pre(_module, args):
            enter(parts, args)

        def post(_module, _args, output):
            leave(output)

    else:

        def pre(_module, args):
            push(attributes)
            enter(parts, args)

        def post(_module, _args, output):
            leave(output)
            pop()

    return pre, post


def _never_called(module):
    # ModuleList, ModuleDict and other pure containers keep torch.nn.Module's own forward, which
    # only raises: no hook of theirs ever runs, so their children open their ranges for them.
    forward = getattr(type(module), "forward", None)
    return getattr(forward, "__name__", None) == "_forward_unimplemented"


def _hidden_components(qualified, name, modules):
    """The components of the never-called containers between a module and its nearest called
    ancestor (the model itself counts when it has a `name`): ("layers",) for a ModuleList item."""
    parts = qualified.split(".")
    out = []
    for k in range(len(parts) - 1, -1, -1):
        ancestor = modules.get(".".join(parts[:k]))
        if ancestor is None or not _never_called(ancestor):
            break
        if k == 0:
            if name is not None:
                out.append(name)
            break
        out.append(parts[k - 1])
    return out[::-1]


def _takes_always_call(module):
    # torch 2.1+: the post hook also runs when forward raises, so an exception leaves no range open.
    try:
        return "always_call" in inspect.signature(module.register_forward_hook).parameters
    except (TypeError, ValueError):
        return False


def instrument(model, *, name=None, backward=True):
    """Puts an NVTX range around every call of every submodule of `model` (a torch.nn.Module).

    A submodule's range is named by its own name; called from its parents' forwards, its report
    path is its qualified name with '/' (`encoder/layers/0/attn`). The model itself gets a range
    only when `name` is given (its paths then start with `name/`). Returns a ModuleRanges; its
    remove() (or a `with` block) takes the hooks away.

    With `backward` (the default), the work autograd does for each module in the backward pass
    (on autograd's own thread) is in ranges too: its path is `backward/` and the module's path
    (`backward/encoder/layers/0/attn`; work of the model's own forward outside its submodules is
    `backward` alone, or `backward/<name>`). See nsightkit.backward for how.

    When no NVTX tool listens (no `nsightkit profile`, no Nsight Systems), no hook is installed, so
    the model runs at its uninstrumented speed. Containers that are never called themselves
    (ModuleList, ModuleDict) get their range from their children: a child's call opens the
    container's range and its own, so its path is still its qualified name
    (`encoder/layers/0/attn`) and the container's row counts its children's calls. A module shared
    under two names is named by the first (named_modules() lists it once); a module called outside
    its parent's forward nests where it is called. Before torch 2.1 a forward that raises leaves
    its range open (no always_call).
    """
    if not hasattr(model, "named_modules") or not hasattr(model, "register_forward_pre_hook"):
        raise TypeError(f"nsightkit.instrument: expected a torch.nn.Module, not {type(model).__name__}")
    if name is not None and (not isinstance(name, str) or not name or "/" in name):
        raise ValueError(f"nsightkit.instrument: name must be a non-empty string without '/', not {name!r}")
    domain = ranges.domain()
    listening = ranges.listening()
    always_call = _takes_always_call(model)
    tracker = None
    if listening and backward:
        import sys

        from .backward import BackwardRanges

        by_component = {}

        def push_component(component):
            a = by_component.get(component)
            if a is None:
                a = by_component[component] = domain.get_event_attributes(component)
            domain.push_range(a)

        # torch is the model's own (imported by whoever built it), never imported here first.
        tracker = BackwardRanges(sys.modules["torch"], push_component, domain.pop_range)
    modules = dict(model.named_modules())
    paths, handles = [], []
    for qualified, module in modules.items():
        if not qualified:
            own, path = name, name
        else:
            own = qualified.rsplit(".", 1)[-1]
            path = qualified.replace(".", "/")
            if name is not None:
                path = f"{name}/{path}"
        if path is not None:
            paths.append(path)
        if not listening or (path is None and tracker is None):
            continue
        parts = tuple(path.split("/")) if path is not None else ()
        names = [] if own is None else [own] if not qualified else (
            _hidden_components(qualified, name, modules) + [own])
        chain = tuple(domain.get_event_attributes(n) for n in names)
        pre, post = _module_hooks(domain.push_range, domain.pop_range, chain, tracker, parts)
        handles.append(module.register_forward_pre_hook(pre))
        if always_call:
            handles.append(module.register_forward_hook(post, always_call=True))
        else:
            handles.append(module.register_forward_hook(post))
    return ModuleRanges(paths, handles)
