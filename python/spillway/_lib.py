"""_lib.py — libspillway.so (built into this package) and the C types of
include/spillway.h that the package passes, field for field in the
header's order. tests/test_abi.py compiles a C program against the header
and checks every size and offset here against the compiler's."""
import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int,
                    c_int32, c_long, c_size_t, c_uint, c_uint32, c_uint64, c_void_p)

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load():
    path = os.environ.get("SPILLWAY_LIBRARY") or os.path.join(_HERE, "libspillway.so")
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError("spillway: cannot load %s (%s): build the package with "
                          "`pip install ./python`, or point SPILLWAY_LIBRARY at a "
                          "libspillway.so" % (path, e)) from None


lib = _load()

SW_OK = 0
STATUS_NAMES = ["ok", "io", "format", "unsupported", "no_device", "oom_device", "oom_host",
                "arg", "device"]
TOK_ADD_BOS, TOK_PARSE_SPECIAL = 1, 2
CHAT_OPEN_REPLY, CHAT_CLOSE_REPLY = 1, 2
REQ_QUEUED, REQ_PREFILL, REQ_DECODE, REQ_DONE = range(4)
FINISH_ERROR = 6   # sw_finish's SW_FINISH_ERROR


class ExpertOptions(Structure):   # spillway_experts.h
    _fields_ = [("slots", c_int), ("policy", c_char_p), ("copy", c_char_p),
                ("prefetch", c_int), ("hit_rate", c_double)]


class EngineDevice(Structure):   # sw_engine_device: one device of an engine
    _fields_ = [("device", c_uint32), ("first_layer", c_uint32), ("end_layer", c_uint32),
                ("budget_bytes", c_uint64), ("plan_bytes", c_uint64), ("peak_bytes", c_uint64),
                ("bytes_to_device", c_uint64), ("peer_bytes", c_uint64), ("peer_in", c_int),
                ("busy_s", c_double)]


class PlanOptions(Structure):
    _fields_ = [("backend", c_char_p), ("device_mem_bytes", c_uint64),
                ("device_mem_fraction", c_double), ("host_mem_bytes", c_uint64),
                ("n_ctx", c_uint32), ("n_batch", c_uint32), ("n_seq", c_uint32),
                ("n_threads", c_int), ("kv_type", c_char_p), ("cpu_dots", c_char_p),
                ("weights", c_char_p), ("place", c_char_p), ("n_gpu_layers", c_int),
                ("n_cpu_moe", c_int), ("sim_link_Bps", c_double), ("default_rates", c_int),
                ("draft_device_bytes", c_uint64), ("drafter", c_char_p),
                ("experts", ExpertOptions)]


class SamplerOptions(Structure):
    _fields_ = [("temp", c_float), ("top_k", c_int), ("top_p", c_float), ("min_p", c_float),
                ("seed", c_uint64)]


TokenFn = CFUNCTYPE(None, c_void_p, c_void_p, c_int32, POINTER(c_char), c_size_t)


class RequestOptions(Structure):
    _fields_ = [("sampling", SamplerOptions), ("n_predict", c_long),
                ("stop", POINTER(c_char_p)), ("n_stop", c_size_t), ("on_token", TokenFn),
                ("user", c_void_p), ("keep_sequence", c_int), ("draft_max", c_int),
                ("logprobs", c_int), ("grammar", c_void_p)]


class RequestInfo(Structure):
    _fields_ = [("state", c_int), ("finish", c_int), ("n_prompt", c_size_t),
                ("n_fed", c_size_t), ("n_generated", c_size_t), ("text_len", c_size_t),
                ("t_submitted", c_double), ("t_started", c_double), ("t_first", c_double),
                ("t_end", c_double)]


class SchedulerStats(Structure):
    _fields_ = [("n_queued", c_size_t), ("n_running", c_size_t), ("n_forwards", c_uint64),
                ("last_forward_tokens", c_uint32), ("prompt_tokens", c_uint64),
                ("generated_tokens", c_uint64), ("decode_tokens", c_uint64),
                ("decode_s", c_double), ("kv_used_tokens", c_uint64),
                ("kv_capacity_tokens", c_uint64), ("verify_forwards", c_uint64),
                ("drafted_tokens", c_uint64), ("accepted_tokens", c_uint64),
                ("verify_tokens", c_uint64)]


DRAFT_MAX = 16   # SW_DRAFT_MAX


class DraftOptions(Structure):
    _fields_ = [("ngram", c_int), ("ngram_min", c_uint32), ("ngram_max", c_uint32),
                ("engine", c_void_p), ("model", c_void_p), ("assistant", c_void_p),
                ("draft_max", c_uint32)]


class PlanSummary(Structure):
    _fields_ = [("device_bytes", c_uint64), ("pinned_bytes", c_uint64), ("host_bytes", c_uint64),
                ("n_resident", c_uint32), ("n_streamed", c_uint32), ("n_host", c_uint32),
                ("prefill_tokens_per_s", c_double), ("decode_tokens_per_s", c_double),
                ("weights", c_char * 16), ("n_ctx", c_uint32)]


class ChatMessage(Structure):
    _fields_ = [("role", c_char_p), ("content", c_char_p), ("len", c_size_t)]


class SpecialTokens(Structure):
    _fields_ = [("bos", c_int32), ("eos", c_int32), ("unk", c_int32), ("pad", c_int32),
                ("start_of_turn", c_int32), ("end_of_turn", c_int32), ("add_bos", c_int)]


P = c_void_p  # every handle: sw_model *, sw_engine *, sw_plan *, ...


def _fn(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


sw_version = _fn("sw_version", c_char_p)
sw_last_error = _fn("sw_last_error", c_char_p)
sw_model_open = _fn("sw_model_open", c_int, c_char_p, POINTER(P))
sw_model_close = _fn("sw_model_close", None, P)
sw_model_is_assistant = _fn("sw_model_is_assistant", c_int, P)
sw_assistant_device_bytes = _fn("sw_assistant_device_bytes", c_int, P, c_uint32,
                                POINTER(c_uint64))
sw_default_model_path = _fn("sw_default_model_path", c_int, c_char_p, c_size_t)
sw_model_special_tokens = _fn("sw_model_special_tokens", c_int, P, POINTER(SpecialTokens))
sw_tokenize = _fn("sw_tokenize", c_int, P, c_char_p, c_size_t, c_uint, POINTER(c_int32),
                  c_size_t, POINTER(c_size_t))
sw_detokenize = _fn("sw_detokenize", c_int, P, POINTER(c_int32), c_size_t, c_char_p, c_size_t,
                    POINTER(c_size_t))
sw_vocab_size = _fn("sw_vocab_size", c_size_t, P)
sw_parse_size = _fn("sw_parse_size", c_int, c_char_p, c_uint64, POINTER(c_uint64))
sw_plan_options_default = _fn("sw_plan_options_default", PlanOptions)
sw_plan_format = _fn("sw_plan_format", c_int, P, c_int, c_char_p, c_size_t, POINTER(c_size_t))
sw_plan_create = _fn("sw_plan_create", c_int, P, c_char_p, POINTER(PlanOptions), POINTER(P))
sw_plan_get_summary = _fn("sw_plan_get_summary", c_int, P, POINTER(PlanSummary))
sw_plan_destroy = _fn("sw_plan_destroy", None, P)
sw_engine_launch = _fn("sw_engine_launch", c_int, P, POINTER(PlanOptions), c_void_p,
                       POINTER(P))
sw_engine_launch_split = _fn("sw_engine_launch_split", c_int, P, POINTER(PlanOptions),
                             POINTER(c_uint64), POINTER(c_uint32), c_size_t, c_void_p,
                             POINTER(P))
sw_engine_format_plan = _fn("sw_engine_format_plan", c_int, P, c_int, c_char_p, c_size_t,
                            POINTER(c_size_t))
sw_engine_n_devices = _fn("sw_engine_n_devices", c_uint32, P)
sw_engine_device_report = _fn("sw_engine_device_report", c_int, P, c_uint32,
                              POINTER(EngineDevice))
sw_engine_destroy = _fn("sw_engine_destroy", None, P)
sw_engine_plan = _fn("sw_engine_plan", P, P)
sw_engine_n_ctx = _fn("sw_engine_n_ctx", c_uint32, P)
sw_engine_n_seq = _fn("sw_engine_n_seq", c_uint32, P)
sw_sampler_options_default = _fn("sw_sampler_options_default", SamplerOptions)
sw_chat_format = _fn("sw_chat_format", c_int, P, POINTER(ChatMessage), c_size_t, c_uint,
                     c_char_p, c_size_t, POINTER(c_size_t))
sw_finish_name = _fn("sw_finish_name", c_char_p, c_int)
sw_request_options_default = _fn("sw_request_options_default", RequestOptions)
sw_scheduler_create = _fn("sw_scheduler_create", c_int, P, P, POINTER(P))
sw_scheduler_destroy = _fn("sw_scheduler_destroy", None, P)
sw_scheduler_submit = _fn("sw_scheduler_submit", c_int, P, POINTER(c_int32), c_size_t,
                          POINTER(RequestOptions), POINTER(P))
sw_scheduler_step = _fn("sw_scheduler_step", c_int, P, POINTER(c_uint32))
sw_scheduler_get_stats = _fn("sw_scheduler_get_stats", None, P, POINTER(SchedulerStats))
sw_draft_options_default = _fn("sw_draft_options_default", DraftOptions)
sw_scheduler_set_draft = _fn("sw_scheduler_set_draft", c_int, P, POINTER(DraftOptions))
sw_scheduler_draft_max = _fn("sw_scheduler_draft_max", c_uint32, P)
sw_request_cancel = _fn("sw_request_cancel", None, P, P)
sw_request_get_info = _fn("sw_request_get_info", None, P, P, POINTER(RequestInfo))
sw_request_error = _fn("sw_request_error", c_int, P, P, POINTER(c_char_p))
sw_request_text = _fn("sw_request_text", c_size_t, P, P, c_size_t, c_char_p, c_size_t)
sw_request_release = _fn("sw_request_release", None, P, P)
