"""model.py — spillway.Model: a Gemma model opened, planned and loaded by
libspillway, generating through the library's scheduler (the continuous
batching `spillway batch` and `serve` run on)."""
import codecs
import ctypes
import json
import os
import threading

from . import _lib as L


class SpillwayError(Exception):
    """A libspillway call failed: `status` is its name ("oom_device",
    "arg", ...; "request" for a generation that failed midway), the message
    is the library's (what is short, by how much, what would fit)."""

    def __init__(self, status, message):
        self.status = status
        super().__init__(message)


def _request_failed(sched, req):
    """The SpillwayError of a request that ended with SW_FINISH_ERROR: the
    library's status and message for it (sw_request_error)."""
    msg = ctypes.c_char_p()
    status = L.sw_request_error(sched, req, ctypes.byref(msg))
    name = L.STATUS_NAMES[status] if 0 < status < len(L.STATUS_NAMES) else "request"
    text = (msg.value or b"").decode("utf-8", "replace")
    return SpillwayError(name, text or "the request failed")


def _check(status):
    if status != L.SW_OK:
        name = L.STATUS_NAMES[status] if 0 <= status < len(L.STATUS_NAMES) else str(status)
        raise SpillwayError(name, (L.sw_last_error() or b"").decode("utf-8", "replace"))


def _bytes(s):
    return None if s is None else s.encode("utf-8")


_SIZE_OPTS = ("device_mem", "host_mem")


class Model:
    """Opens `path` (a GGUF file or a Hugging Face folder; None: the default
    model `spillway fetch` downloads), plans it with the options given
    (those of `spillway plan`: backend, n_ctx, n_batch, n_seq, n_threads,
    device_mem and host_mem as bytes or "8G"/"80%", kv_type, cpu_dots,
    weights, place, n_gpu_layers, n_cpu_moe, sim_link_bps) and loads it.
    Use it as a context manager, or call close().

    Speculative decoding, as `spillway run --draft-ngram | --draft-model`:
    draft_ngram=True drafts from the text's own n-grams; draft_model=PATH
    from a smaller model with the same vocabulary, planned like this one
    (no placement pins, this model's context and sequences) first, its
    device bytes reserved in this model's plan (or on a budget of its own,
    draft_device_mem) — or, when PATH is a
    Gemma 4 assistant folder, from that assistant over this model's caches,
    its device bytes reserved in this model's plan. draft_max: drafts per
    verify, 1 to 16 (None: the cost model's choice). Greedy output is
    exactly the output without drafts; sampled output keeps its
    distribution.

    Several devices, as `spillway run --device-mem A,B --devices N,M`:
    device_mem=["16G", "16G"] (one size per device) plans a split of the
    layers over them, devices=[0, 2] says which of the backend's devices
    (default 0, 1, ...); plan() is then the split's and devices() says
    what each device did. With a split, n-gram drafts but no draft model
    yet."""

    def __init__(self, path=None, draft_ngram=False, draft_model=None, draft_max=None,
                 draft_device_mem=None, devices=None, **plan_options):
        self._model = L.P()
        self._engine = L.P()
        self._sched = L.P()
        self._draft_model = L.P()
        self._draft_engine = L.P()
        self._lock = threading.Lock()   # one stepping thread at a time
        if path is None:
            buf = ctypes.create_string_buffer(4096)
            _check(L.sw_default_model_path(buf, len(buf)))
            path = buf.value.decode("utf-8")
        _check(L.sw_model_open(_bytes(str(path)), ctypes.byref(self._model)))
        try:
            split = plan_options.pop("device_mem", None)
            if split is not None and not isinstance(split, (list, tuple)):
                plan_options["device_mem"], split = split, None
            opts, self._keep = self._plan_options(plan_options)
            if split is not None:
                if draft_model is not None:
                    raise ValueError("device_mem with several devices (a split) takes no "
                                     "draft model from Python yet (draft_ngram drafts without "
                                     "one; `spillway run --device-mem A,B -md PATH` does)")
                self._launch_split(opts, split, devices)
            elif devices is not None:
                raise ValueError("devices picks the devices of a split: give device_mem as "
                                 "one size per device")
            else:
                if draft_model is not None:   # the drafter's device bytes go into this plan
                    self._reserve_drafter(opts, draft_model, draft_device_mem)
                _check(L.sw_engine_launch(self._model, ctypes.byref(opts), None,
                                          ctypes.byref(self._engine)))
            _check(L.sw_scheduler_create(self._engine, self._model, ctypes.byref(self._sched)))
            if draft_ngram or draft_model is not None or draft_max is not None:
                self._start_draft(opts, draft_ngram, draft_model, draft_max, draft_device_mem)
        except BaseException:
            self.close()
            raise
        self.n_ctx = L.sw_engine_n_ctx(self._engine)
        self.n_seq = L.sw_engine_n_seq(self._engine)

    @staticmethod
    def _plan_options(kw):
        o = L.sw_plan_options_default()
        keep = []   # the bytes the struct points at live as long as it
        names = {"sim_link_bps": "sim_link_Bps"}
        for key, value in kw.items():
            field = names.get(key, key)
            if key in _SIZE_OPTS:
                if isinstance(value, str) and value.endswith("%"):
                    o.device_mem_fraction = float(value[:-1]) / 100.0
                    continue
                value = _size(value)
                field = key + "_bytes"
            if field not in dict(L.PlanOptions._fields_):
                raise TypeError("unknown plan option %r" % key)
            if isinstance(value, str):
                value = value.encode("utf-8")
                keep.append(value)
            setattr(o, field, value)
        return o, keep

    def _launch_split(self, opts, sizes, devices):
        """sw_engine_launch_split over len(sizes) devices."""
        n = len(sizes)
        budgets = (L.c_uint64 * n)(*[_size(v) for v in sizes])
        ids = None
        if devices is not None:
            if len(devices) != n:
                raise ValueError("devices names %d devices but device_mem gives %d sizes: "
                                 "one each" % (len(devices), n))
            ids = (L.c_uint32 * n)(*[int(d) for d in devices])
        _check(L.sw_engine_launch_split(self._model, ctypes.byref(opts), budgets, ids, n, None,
                                        ctypes.byref(self._engine)))

    def _plan(self, model, opts):
        """A plan's summary (sw_plan_create; nothing is loaded)."""
        plan, summary = L.P(), L.PlanSummary()
        _check(L.sw_plan_create(model, None, ctypes.byref(opts), ctypes.byref(plan)))
        try:
            _check(L.sw_plan_get_summary(plan, ctypes.byref(summary)))
        finally:
            L.sw_plan_destroy(plan)
        return summary

    def _reserve_drafter(self, opts, path, device_mem):
        """As the CLI's draft_reserve: one device budget, the drafter's
        share reserved in this model's plan (its drafter row) — a Gemma 4
        assistant's bytes, or a draft model's plan on the device, planned
        first at this model's context; draft_device_mem instead gives a
        draft model a budget of its own."""
        _check(L.sw_model_open(_bytes(str(path)), ctypes.byref(self._draft_model)))
        if not opts.n_ctx:
            opts.n_ctx = self._plan(self._model, opts).n_ctx
        need = 0
        if L.sw_model_is_assistant(self._draft_model):
            if device_mem is not None:
                raise ValueError("draft_device_mem: a Gemma 4 assistant has no budget of its "
                                 "own (its bytes come off device_mem)")
            n = ctypes.c_uint64()
            _check(L.sw_assistant_device_bytes(self._draft_model, opts.n_seq or 1,
                                               ctypes.byref(n)))
            need = n.value
        elif device_mem is None:
            need = self._draft_share(opts)
        if need:
            opts.draft_device_bytes = need
            name = _bytes(os.path.basename(str(path).rstrip("/")))
            self._keep.append(name)
            opts.drafter = name

    def _fits(self, model, opts):
        """Whether model plans with opts (the planner's refusal: no)."""
        try:
            self._plan(model, opts)
            return True
        except SpillwayError:
            return False

    def _draft_share(self, opts):
        """As the CLI's reserve_model: the draft model's device bytes planned
        on the whole budget; when this model then does not fit, the largest
        budget (to 1/64) whose plan leaves it room."""
        def draft_bytes(budget):
            po = self._draft_options(opts, None)
            if budget:
                po.device_mem_bytes, po.device_mem_fraction = budget, 0.0
            return self._plan(self._draft_model, po).device_bytes

        def target_fits(reserve):
            t = L.PlanOptions.from_buffer_copy(opts)
            t.draft_device_bytes = reserve
            return self._fits(self._model, t)
        want = draft_bytes(0)
        if want == 0 or target_fits(want):
            return want
        lo, hi, best = 0, want, 0
        while hi - lo > want // 64 + 1:
            mid = lo + (hi - lo) // 2
            try:
                got = draft_bytes(mid)
            except SpillwayError:
                got = None
            if got is not None and got <= mid and target_fits(got):
                lo, best = mid, got
            else:
                hi = mid
        return best

    @staticmethod
    def _draft_options(opts, device_mem):
        """The draft model's plan options, as the CLI's draft_plan()."""
        po = L.PlanOptions.from_buffer_copy(opts)
        po.place, po.n_gpu_layers, po.n_cpu_moe = None, -1, 0
        po.draft_device_bytes, po.drafter = 0, None
        if isinstance(device_mem, str) and device_mem.endswith("%"):
            po.device_mem_bytes, po.device_mem_fraction = 0, float(device_mem[:-1]) / 100.0
        elif device_mem is not None:
            po.device_mem_bytes, po.device_mem_fraction = _size(device_mem), 0.0
        elif opts.draft_device_bytes:   # its share, reserved in this model's plan
            po.device_mem_bytes, po.device_mem_fraction = opts.draft_device_bytes, 0.0
        return po

    def _start_draft(self, opts, ngram, path, draft_max, device_mem):
        """The scheduler's drafter (sw_scheduler_set_draft); a draft model
        planned as the CLI's draft_plan() plans it."""
        if bool(ngram) == (path is not None):
            raise ValueError("speculative decoding: give draft_ngram=True or draft_model=PATH "
                             "(one drafter)")
        d = L.sw_draft_options_default()
        d.ngram = 1 if ngram else 0
        if draft_max is not None:
            if not 1 <= draft_max <= L.DRAFT_MAX:
                raise ValueError("draft_max %r: 1 to %d drafts per verify"
                                 % (draft_max, L.DRAFT_MAX))
            d.draft_max = draft_max
        if path is not None and L.sw_model_is_assistant(self._draft_model):
            d.assistant = self._draft_model
        elif path is not None:
            po = self._draft_options(opts, device_mem)
            po.n_ctx = L.sw_engine_n_ctx(self._engine)
            _check(L.sw_engine_launch(self._draft_model, ctypes.byref(po), None,
                                      ctypes.byref(self._draft_engine)))
            d.engine, d.model = self._draft_engine, self._draft_model
        _check(L.sw_scheduler_set_draft(self._sched, ctypes.byref(d)))

    def close(self):
        """Frees the scheduler, the engines and the models (also on exit of
        a `with` block). Calling it twice is harmless."""
        if getattr(self, "_sched", None):
            L.sw_scheduler_destroy(self._sched)
            self._sched = L.P()
        if getattr(self, "_draft_engine", None):   # borrowed by the scheduler until here
            L.sw_engine_destroy(self._draft_engine)
            self._draft_engine = L.P()
        if getattr(self, "_draft_model", None):
            L.sw_model_close(self._draft_model)
            self._draft_model = L.P()
        if getattr(self, "_engine", None):
            L.sw_engine_destroy(self._engine)
            self._engine = L.P()
        if getattr(self, "_model", None):
            L.sw_model_close(self._model)
            self._model = L.P()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _live(self):
        if not self._sched:
            raise ValueError("the model is closed")

    # ---- plan and tokens ----------------------------------------------

    def plan(self):
        """The executed plan, as `spillway plan --json` prints it: where
        every layer, the KV cache and the LM head live, the memory per tier
        and the predicted speed."""
        self._live()
        n = ctypes.c_size_t()
        _check(L.sw_engine_format_plan(self._engine, 1, None, 0, ctypes.byref(n)))
        buf = ctypes.create_string_buffer(n.value + 1)
        _check(L.sw_engine_format_plan(self._engine, 1, buf, len(buf), ctypes.byref(n)))
        return json.loads(buf.value.decode("utf-8"))

    def devices(self):
        """What each device the engine drives did (none on the cpu backend):
        which (device), its layers [first_layer, end_layer), budget, plan
        and peak bytes,
        bytes over the link, bytes device to device from the one before
        (peer_in), seconds busy."""
        self._live()
        out = []
        for d in range(L.sw_engine_n_devices(self._engine)):
            r = L.EngineDevice()
            _check(L.sw_engine_device_report(self._engine, d, ctypes.byref(r)))
            out.append({name: getattr(r, name) for name, _ in L.EngineDevice._fields_})
            out[-1]["peer_in"] = bool(r.peer_in)
        return out

    def tokenize(self, text, add_bos=True, special=False):
        """Token ids of `text` (BOS first when add_bos and the model asks
        for it; control tokens such as <start_of_turn> parsed when
        special)."""
        self._live()
        data = text.encode("utf-8")
        cap = 3 * len(data) + 2
        ids = (ctypes.c_int32 * cap)()
        n = ctypes.c_size_t()
        flags = (L.TOK_ADD_BOS if add_bos else 0) | (L.TOK_PARSE_SPECIAL if special else 0)
        _check(L.sw_tokenize(self._model, data, len(data), flags, ids, cap, ctypes.byref(n)))
        return list(ids[:n.value])

    def detokenize(self, ids):
        """The text of ids (control tokens skipped; invalid UTF-8 replaced)."""
        self._live()
        arr = (ctypes.c_int32 * len(ids))(*ids)
        n = ctypes.c_size_t()
        _check(L.sw_detokenize(self._model, arr, len(ids), None, 0, ctypes.byref(n)))
        buf = ctypes.create_string_buffer(n.value + 1)
        _check(L.sw_detokenize(self._model, arr, len(ids), buf, len(buf), ctypes.byref(n)))
        return buf.raw[:n.value].decode("utf-8", "replace")

    def chat_prompt(self, messages):
        """The model's chat markup for messages ([{"role": "system" | "user"
        | "assistant", "content": str}, ...]), opening the model's reply:
        the text `chat` and `serve` write."""
        self._live()
        arr = (L.ChatMessage * len(messages))()
        keep = []
        for i, m in enumerate(messages):
            role, content = _bytes(m["role"]), _bytes(m["content"])
            keep += [role, content]
            arr[i] = L.ChatMessage(role, content, len(content))
        n = ctypes.c_size_t()
        _check(L.sw_chat_format(self._model, arr, len(messages), L.CHAT_OPEN_REPLY, None, 0,
                                ctypes.byref(n)))
        buf = ctypes.create_string_buffer(n.value + 1)
        _check(L.sw_chat_format(self._model, arr, len(messages), L.CHAT_OPEN_REPLY, buf,
                                len(buf), ctypes.byref(n)))
        return buf.raw[:n.value].decode("utf-8")

    # ---- generation ---------------------------------------------------

    def _submit(self, prompt, max_tokens, temperature, top_k, top_p, min_p, seed, stop,
                draft_max=None):
        if isinstance(prompt, str):
            ids = self.tokenize(prompt, add_bos=True, special=True)
        else:
            ids = list(prompt)
        o = L.sw_request_options_default()
        s = L.sw_sampler_options_default()
        if temperature is not None:
            s.temp = temperature
        if top_k is not None:
            s.top_k = top_k
        if top_p is not None:
            s.top_p = top_p
        if min_p is not None:
            s.min_p = min_p
        if seed is not None:
            s.seed = seed
        o.sampling = s
        o.n_predict = -1 if max_tokens is None else max_tokens
        if draft_max is not None:
            o.draft_max = draft_max
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        enc = [_bytes(x) for x in stops]
        arr = (ctypes.c_char_p * max(1, len(enc)))(*enc)
        o.stop = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
        o.n_stop = len(enc)
        req = L.P()
        id_arr = (ctypes.c_int32 * max(1, len(ids)))(*ids)
        _check(L.sw_scheduler_submit(self._sched, id_arr, len(ids), ctypes.byref(o),
                                     ctypes.byref(req)))
        return req, max((len(x) for x in enc), default=0)

    def _info(self, req):
        info = L.RequestInfo()
        L.sw_request_get_info(self._sched, req, ctypes.byref(info))
        return info

    def _text(self, req, start, end):
        buf = ctypes.create_string_buffer(max(1, end - start))
        n = L.sw_request_text(self._sched, req, start, buf, end - start)
        return buf.raw[:n]

    def _step(self):
        n = ctypes.c_uint32()
        _check(L.sw_scheduler_step(self._sched, ctypes.byref(n)))
        return n.value

    def generate(self, prompt, max_tokens=128, temperature=None, top_k=None, top_p=None,
                 min_p=None, seed=None, stop=None, draft_max=None):
        """Yields the continuation of `prompt` (text, tokenized with BOS and
        control tokens, or a list of token ids) as it is generated: str
        pieces, never a split UTF-8 character nor text a stop string could
        still remove. Sampling: the library's defaults (temperature 0.8,
        top_k 40, top_p 0.95, min_p 0.05) unless given; temperature 0 is
        greedy. Ends at an end-of-turn token, after max_tokens (None: no
        limit), when the context is full, or at a stop string (a str or a
        list; the text ends where the first one starts). draft_max: this
        request's drafts per verify with the model's drafter (0: none; None:
        the model's)."""
        self._live()
        with self._lock:
            req, hold = self._submit(prompt, max_tokens, temperature, top_k, top_p, min_p, seed,
                                     stop, draft_max)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        sent = 0
        try:
            while True:
                with self._lock:
                    self._step()
                    info = self._info(req)
                    done = info.state == L.REQ_DONE
                    end = info.text_len if done else max(sent, info.text_len - max(0, hold - 1))
                    data = self._text(req, sent, end) if end > sent else b""
                sent = end
                piece = decoder.decode(data, final=done)
                if piece:
                    yield piece
                if done:
                    if info.finish == L.FINISH_ERROR:
                        raise _request_failed(self._sched, req)
                    return
        finally:
            with self._lock:
                L.sw_request_release(self._sched, req)

    def __call__(self, prompt, **kw):
        """The whole continuation of prompt as one str (generate()'s pieces
        joined)."""
        return "".join(self.generate(prompt, **kw))

    def chat(self, messages, **kw):
        """Streams the model's reply to messages (see chat_prompt and
        generate; max_tokens defaults to none)."""
        kw.setdefault("max_tokens", None)
        return self.generate(self.chat_prompt(messages), **kw)

    def batch(self, prompts, max_tokens=128, temperature=None, top_k=None, top_p=None,
              min_p=None, seed=None, stop=None, draft_max=None):
        """The continuations of many prompts, generated together (up to the
        engine's n_seq at a time, each forward carrying all of them), in
        the prompts' order. With temperature 0 each equals generate()'s."""
        self._live()
        reqs = []
        with self._lock:
            try:
                for p in prompts:
                    reqs.append(self._submit(p, max_tokens, temperature, top_k, top_p, min_p,
                                             seed, stop, draft_max)[0])
                while self._step() > 0:
                    pass
                out = []
                for r in reqs:
                    info = self._info(r)
                    if info.finish == L.FINISH_ERROR:
                        raise _request_failed(self._sched, r)
                    out.append(self._text(r, 0, info.text_len).decode("utf-8", "replace"))
                return out
            finally:
                for r in reqs:
                    L.sw_request_release(self._sched, r)

    def stats(self):
        """The scheduler's counters: forwards, tokens, KV in use; with a
        drafter, its drafts per verify (draft_max) and the speculative
        counts (verify_forwards, drafted_tokens, accepted_tokens,
        verify_tokens)."""
        self._live()
        st = L.SchedulerStats()
        L.sw_scheduler_get_stats(self._sched, ctypes.byref(st))
        out = {name: getattr(st, name) for name, _ in L.SchedulerStats._fields_}
        out["draft_max"] = L.sw_scheduler_draft_max(self._sched)
        return out


def _size(value):
    if isinstance(value, int):
        return value
    out = ctypes.c_uint64()
    _check(L.sw_parse_size(_bytes(value), 0, ctypes.byref(out)))
    return out.value
