"""Backward ranges: the work autograd does for a module, in `backward/<module path>` ranges.

Autograd runs a module's backward on its own thread (one per device), where the forward's ranges
are not open. Each autograd node made during a module's forward is given to that module when the
forward returns (its post hook walks the new part of the graph), and a pre-hook on the node makes
the module's chain of ranges (`backward`, then each component of its path) the open one on the
thread that runs the node. Autograd runs one node at a time per thread, so every kernel a node
launches lands in the node's module. Only the changed tail of the chain is popped and pushed from
one node to the next, and a callback at the end of each backward pass closes what is still open.
"""

import threading

_MARK = "nsightkit.backward"  # in a node's metadata: its pre-hook is on


class _Call:
    """One module call in progress (or just ended): its path and the nodes its inputs came from."""

    __slots__ = ("parts", "inputs")

    def __init__(self, parts, inputs):
        self.parts = parts
        self.inputs = inputs


_NO_GRAD = _Call((), frozenset())  # a call made with gradients off


def _tensors(value, out, depth=0):
    # A module's inputs and outputs: tensors, or tuples, lists and dicts of them (one level deep
    # is what modules pass; deeper nesting is walked to a small limit).
    if hasattr(value, "grad_fn") and hasattr(value, "requires_grad"):
        out.append(value)
    elif depth < 4 and isinstance(value, (tuple, list)):
        for v in value:
            _tensors(v, out, depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for v in value.values():
            _tensors(v, out, depth + 1)
    return out


def _nodes(value, tensor):
    # The autograd nodes that produced a module's tensors; a leaf that requires grad stands for
    # itself (its AccumulateGrad node is reached through the nodes that use it). One tensor, or a
    # tuple of one (most modules' inputs), skips the general walk: this runs twice per call.
    if type(value) is tuple and len(value) == 1:
        value = value[0]
    if isinstance(value, tensor):
        node = value.grad_fn
        return (node,) if node is not None else ()
    return [t.grad_fn for t in _tensors(value, []) if t.grad_fn is not None]


class BackwardRanges:
    """Gives autograd nodes to the module calls that made them, and opens their ranges in backward.

    push(component) and pop() are NVTX push/pop in nsightkit's domain; `torch` is the module, passed
    in so that this file never imports it.
    """

    ROOT = "backward"

    def __init__(self, torch, push, pop):
        self._torch = torch
        self._tensor = torch.Tensor
        self._push = push
        self._pop = pop
        # Per thread (DataParallel's replicas share these hooks): "calls", the module calls in
        # progress, outermost first; "owner", node -> _Call for the outermost forward in progress.
        self._forward = threading.local()
        self._hooks = {}  # chain of components -> the node pre-hook that opens it
        self._open = threading.local()  # per thread: the chain now pushed, and its pass
        self._pass = 0  # backward passes ended so far

    # ---- forward: who made which node ----

    def _state(self):
        state = self._forward.__dict__
        if "calls" not in state:
            state["calls"] = []
            state["owner"] = {}
        return state["calls"], state["owner"]

    def enter(self, parts, args):
        """A module's forward begins (its forward pre-hook)."""
        calls, _ = self._state()
        if not self._torch.is_grad_enabled():
            calls.append(_NO_GRAD)  # inference: nothing to give away, nothing to walk
            return
        calls.append(_Call(parts, set(_nodes(args, self._tensor))))

    def leave(self, output):
        """A module's forward returned (its forward post-hook; also after it raised, with
        always_call, and then `output` holds no tensor): its new nodes become its own."""
        calls, owner = self._state()
        if not calls:
            return
        call = calls.pop()
        if call is not _NO_GRAD and self._torch.is_grad_enabled():
            self._claim(call, _nodes(output, self._tensor), owner)
            if not calls:
                # Where the outermost call's inputs came from is outside every module: reaching
                # it in backward closes the chain, so that work is nobody's.
                close = self._hook_for(())
                for node in call.inputs:
                    if node not in owner:
                        node.register_prehook(close)
        if not calls:
            # The outermost call ended: nothing is left to walk through; drop the references so
            # the graph (and the tensors it saved) lives only as long as the program keeps it.
            owner.clear()

    def _claim(self, call, roots, owner):
        parts = call.parts
        depth = len(parts)
        hook = self._hook_for((self.ROOT,) + parts)
        stop = call.inputs
        todo = list(roots)
        pop, append, extend = todo.pop, todo.append, todo.extend
        get = owner.get
        while todo:
            node = pop()
            other = get(node)
            if other is not None:
                # Seen (this call's), a child's (go on from where the child's inputs came from), or
                # another call's outside this one (not this call's).
                if other is not call and len(other.parts) > depth and other.parts[:depth] == parts:
                    extend(other.inputs)
                continue
            if node in stop or type(node).__name__ == "AccumulateGrad":
                # A parameter's gradient accumulation runs right after the node that made the
                # gradient, in that node's chain; the node outlives the step (hooked once a step,
                # its hooks would pile up).
                continue
            owner[node] = call
            marks = node.metadata
            if _MARK in marks:
                continue  # hooked in an earlier step (a tensor kept from then): so is its history
            marks[_MARK] = True
            node.register_prehook(hook)
            for edge in node.next_functions:  # a loop, not a generator: this is the hot path
                if edge[0] is not None:
                    append(edge[0])

    # ---- backward: the chain of ranges on the thread that runs the nodes ----

    def _hook_for(self, chain):
        hook = self._hooks.get(chain)
        if hook is None:

            def hook(_grad_outputs):
                self._enter_chain(chain)

            self._hooks[chain] = hook
        return hook

    def _enter_chain(self, chain):
        local = self._open
        now = getattr(local, "chain", ())  # the chain open on this thread (a tuple)
        if getattr(local, "pass_", -1) != self._pass:
            # This thread's first node of a backward pass. What a pass before left open here (its
            # end ran on another thread: several devices) closes now.
            for _ in now:
                self._pop()
            now = ()
            local.pass_ = self._pass
            # Queued from inside the pass: runs when it ends, on the thread that ran its last node
            # (the only thread, for one device).
            self._torch.autograd.Variable._execution_engine.queue_callback(self._close)
        elif now is chain:
            return  # the same module as the node before: its chain is open
        common = 0
        limit = min(len(now), len(chain))
        while common < limit and now[common] == chain[common]:
            common += 1
        for _ in range(len(now) - common):
            self._pop()
        for component in chain[common:]:
            self._push(component)
        local.chain = chain

    def _close(self):
        self._pass += 1
        local = self._open
        for _ in getattr(local, "chain", ()):
            self._pop()
        local.chain = ()
