"""QConfig presets against torch 1.13, QConfigMapping precedence, the lazy re-export and the no-torch error."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (apt-get install python3-torch)")
tq = pytest.importorskip("torch.ao.quantization")

import lucid.quantization as Q  # noqa: E402
import lucidq  # noqa: E402
import lucidq.workflow as W  # noqa: E402
from lucidq._workflow_names import WORKFLOW_NAMES  # noqa: E402

nn = torch.nn


def describe(observer):
    """What an observer / fake quantizer computes, comparable between lucidq's and torch's."""
    post = getattr(observer, "activation_post_process", observer)
    text = str(post.dtype).replace("torch.", "").replace("lucidq.", "")
    scheme = str(post.qscheme).replace("torch.", "").replace("lucidq.", "")
    return (
        type(observer).__name__, type(post).__name__, text, scheme,
        post.quant_min, post.quant_max, post.ch_axis if "channel" in scheme else None,
        # float32, as both compute the moving averages
        float(np.float32(post.averaging_constant)) if hasattr(post, "averaging_constant") else None,
    )


@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn"])
def test_ptq_presets_equal_torch(backend):
    ours = W.get_default_qconfig(backend)
    theirs = tq.get_default_qconfig(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for role in ("activation", "weight"):
            a, b = getattr(ours, role)(), getattr(theirs, role)()
            assert describe(a) == describe(b), role
            assert a.reduce_range == b.reduce_range


@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn"])
def test_qat_presets_equal_torch_version0(backend):
    ours = W.get_default_qat_qconfig(backend)
    theirs = tq.get_default_qat_qconfig(backend, version=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for role in ("activation", "weight"):
            assert describe(getattr(ours, role)()) == describe(getattr(theirs, role)()), role


def test_lucid_defaults():
    qconfig = Q.get_default_qconfig()
    activation, weight = qconfig.activation(), qconfig.weight()
    assert isinstance(activation, W.HistogramObserver)
    assert (activation.dtype, activation.qscheme) == (lucidq.quint8, lucidq.per_tensor_affine)
    assert isinstance(weight, W.PerChannelMinMaxObserver)
    assert (weight.dtype, weight.qscheme, weight.ch_axis) == (lucidq.qint8, lucidq.per_channel_symmetric, 0)
    qat = Q.get_default_qat_qconfig()
    act, wt = qat.activation(), qat.weight()
    assert isinstance(act, W.FakeQuantize) and isinstance(act.activation_post_process, W.MovingAverageMinMaxObserver)
    assert isinstance(wt, W.FakeQuantize) and isinstance(wt.activation_post_process, W.PerChannelMinMaxObserver)
    assert wt.is_per_channel and wt.dtype == lucidq.qint8


def test_lucid_spelling_with_the_cpp_observer_names():
    # Lucid writes Q.HistogramObserver.with_args(...): lucidq's top-level observers are the C++
    # ones, whose with_args (and the bare classes in a QConfig) give the torch-module twins.
    qconfig = Q.QConfig(
        activation=Q.HistogramObserver.with_args(qscheme=Q.per_tensor_affine, dtype=Q.quint8),
        weight=Q.PerChannelMinMaxObserver,
    )
    assert qconfig.activation == W.get_default_qconfig().activation
    assert qconfig.weight is W.PerChannelMinMaxObserver
    assert isinstance(qconfig.activation(), torch.nn.Module)


def test_unknown_backend_is_an_error():
    with pytest.raises(ValueError, match="'tpu'.*lucidq, x86"):
        W.get_default_qconfig("tpu")
    with pytest.raises(ValueError, match="backend"):
        W.get_default_qat_qconfig_mapping("armv9")


def test_with_args_repr_reads_like_code():
    factory = W.FakeQuantize.with_args(observer=W.MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    assert repr(factory) == (
        "FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)"
    )
    assert "reduce_range=True" in repr(W.default_fake_quant)
    assert W.get_default_qconfig("x86") == W.get_default_qconfig("fbgemm")
    assert hash(W.get_default_qconfig()) == hash(W.get_default_qconfig())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
        self.head = nn.Linear(4, 2)
        self.act = nn.Sigmoid()


def test_mapping_precedence_name_over_regex_over_type_over_global():
    model = Net()
    g, t, r, n = (W.QConfig(W.MinMaxObserver.with_args(quant_max=q, quant_min=0), W.default_weight_observer)
                  for q in (101, 102, 103, 104))
    mapping = W.QConfigMapping().set_global(g)
    assert mapping.qconfig_for("head", model.head) is g
    mapping.set_object_type(nn.Linear, t)
    assert mapping.qconfig_for("head", model.head) is t
    assert mapping.qconfig_for("act", model.act) is g
    mapping.set_module_name_regex(r"encoder\..*", r)
    assert mapping.qconfig_for("encoder.0", model.encoder[0]) is r
    assert mapping.qconfig_for("head", model.head) is t
    mapping.set_module_name("encoder", n)  # a name covers its submodules
    assert mapping.qconfig_for("encoder.0", model.encoder[0]) is n
    mapping.set_module_name("encoder.2", None)  # None: leave float
    assert mapping.qconfig_for("encoder.2", model.encoder[2]) is None
    assert mapping.qconfig_for("encoder.0", model.encoder[0]) is n
    mapping.set_object_type(nn.Sigmoid, None)
    assert mapping.qconfig_for("act", model.act) is None


def test_regex_first_registered_wins_and_resetting_keeps_order():
    a, b, c = (W.QConfig(W.MinMaxObserver.with_args(quant_min=0, quant_max=q), None) for q in (60, 61, 62))
    mapping = W.QConfigMapping().set_module_name_regex("enc.*", a).set_module_name_regex("encoder.*", b)
    assert mapping.qconfig_for("encoder.1", None) is a
    mapping.set_module_name_regex("enc.*", c)
    assert list(mapping.module_name_regex_qconfigs) == ["enc.*", "encoder.*"]
    assert mapping.qconfig_for("encoder.1", None) is c


def test_mapping_matches_torch_resolution():
    # torch's own resolver (used by FX) on the same mapping gives the same answers.
    from torch.ao.quantization.qconfig_mapping_utils import maybe_adjust_qconfig_for_module_type_or_name

    qcs = [tq.QConfig(tq.MinMaxObserver.with_args(quant_min=0, quant_max=q), tq.default_weight_observer)
           for q in (90, 91, 92, 93)]
    ours, theirs = W.QConfigMapping(), tq.QConfigMapping()
    ours_qcs = [W.QConfig(*qc) for qc in qcs]
    ours.set_global(ours_qcs[0]).set_object_type(nn.Linear, ours_qcs[1])
    ours.set_module_name_regex("encoder.*", ours_qcs[2]).set_module_name("encoder.2", ours_qcs[3])
    theirs.set_global(qcs[0]).set_object_type(nn.Linear, qcs[1])
    theirs.set_module_name_regex("encoder.*", qcs[2]).set_module_name("encoder.2", qcs[3])
    model = Net()
    for name, module in model.named_modules():
        expected = maybe_adjust_qconfig_for_module_type_or_name(theirs, type(module), name, qcs[0])
        got = ours.qconfig_for(name, module)
        assert qcs.index(expected) == ours_qcs.index(got), name


def test_mapping_errors_and_dict_round_trip():
    mapping = W.QConfigMapping()
    with pytest.raises(ValueError, match="expected a QConfig"):
        mapping.set_global("fbgemm")
    with pytest.raises(ValueError, match="torch.nn.Module subclass"):
        mapping.set_object_type("linear", None)
    with pytest.raises(ValueError, match="regular expression"):
        mapping.set_module_name_regex("enc(", None)
    mapping.set_module_name("encoder.0", None).set_module_name("decoder", W.get_default_qconfig())
    with pytest.raises(ValueError, match="'decoder'.*not found.*encoder"):
        mapping.check_module_names(Net())
    again = W.QConfigMapping.from_dict(mapping.to_dict())
    assert again.module_name_qconfigs == mapping.module_name_qconfigs
    with pytest.raises(ValueError, match="unknown key"):
        W.QConfigMapping.from_dict({"module_names": []})


def test_default_mappings():
    lucid = W.get_default_qconfig_mapping()
    assert lucid.global_qconfig == W.get_default_qconfig() and not lucid.object_type_qconfigs
    x86 = W.get_default_qconfig_mapping("x86")
    sigmoid = x86.qconfig_for("act", nn.Sigmoid())
    scale, zero_point = sigmoid.activation().calculate_qparams()
    assert scale.item() == 1.0 / 256 and zero_point.item() == 0
    tanh = W.get_default_qat_qconfig_mapping("qnnpack").qconfig_for("t", nn.Tanh()).activation()
    assert isinstance(tanh, W.FixedQParamsFakeQuantize) and tanh.zero_point.item() == 128
    transpose = x86.qconfig_for("up", nn.ConvTranspose2d(2, 2, 2)).weight()
    assert not transpose.qscheme.is_per_channel  # pytorch/pytorch#47535
    assert isinstance(W.get_default_qat_qconfig_mapping().global_qconfig.activation(), W.FakeQuantize)


def test_names_are_exported_lazily_everywhere():
    from lucidq.workflow import (algorithms, calibration, fake_quantize, fx, observer, qconfig,
                                 qconfig_mapping, quantize)

    submodules = (algorithms, calibration, fake_quantize, fx, observer, qconfig, qconfig_mapping,
                  quantize)
    assert set().union(*(module.__all__ for module in submodules)) == set(WORKFLOW_NAMES)
    assert len(set(WORKFLOW_NAMES)) == len(WORKFLOW_NAMES)
    for name in WORKFLOW_NAMES:
        if name in dir(lucidq._lucidq):  # the C++ observers keep their top-level names
            assert getattr(lucidq, name) is getattr(lucidq._lucidq, name)
            continue
        assert getattr(lucidq, name) is getattr(W, name), name
        assert getattr(Q, name) is getattr(W, name), name
    with pytest.raises(AttributeError, match="'lucidq' has no attribute 'no_such_name'"):
        lucidq.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="'lucid.quantization' has no attribute"):
        Q.no_such_name  # noqa: B018
    assert "QConfig" in dir(lucidq)


def test_import_without_torch_is_clear(module_pythonpath):
    # torch hidden (sys.modules["torch"] = None makes `import torch` fail): lucidq still imports,
    # lucidq.workflow and lucidq.QConfig raise one ImportError saying how to install torch.
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "import lucidq, lucid.quantization as Q, numpy as np\n"
        "assert Q.quantize(np.array([0.1], np.float32), 0.02, 3, Q.quint8).tolist() == [8]\n"
        "for touch in (lambda: __import__('lucidq.workflow'), lambda: lucidq.QConfig,\n"
        "              lambda: Q.get_default_qconfig):\n"
        "    try:\n"
        "        touch()\n"
        "    except ImportError as error:\n"
        "        assert 'apt-get install python3-torch' in str(error), error\n"
        "    else:\n"
        "        raise SystemExit('no ImportError')\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": module_pythonpath, "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("name", ["observer", "fake_quantize", "qconfig", "qconfig_mapping"])
def test_docstring_examples(name):
    import doctest
    import importlib

    module = importlib.import_module(f"lucidq.workflow.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    print(f"lucidq.workflow.{name}: {result.attempted} examples")
    assert result.attempted > 0 and result.failed == 0


def test_docs_section_examples():
    # The ">>>" examples of docs/workflow.md's section "Observers, fake quantization and QConfig".
    import doctest
    import pathlib

    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "workflow.md").read_text()
    start = text.index("## Observers, fake quantization and QConfig")
    section = text[start:text.index("\n## ", start)]
    section = "\n".join("" if line.startswith("```") else line for line in section.splitlines())
    test = doctest.DocTestParser().get_doctest(section, {}, "docs/workflow.md", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    print(f"docs/workflow.md section: {result.attempted} examples")
    assert result.attempted >= 10 and result.failed == 0
