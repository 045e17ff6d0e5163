"""The public names of lucidq.workflow, known without importing torch (for lucidq's lazy re-export).

lucidq.workflow's __all__ is this tuple; `lucidq.<name>` and
`lucid.quantization.<name>` import the workflow (and torch) on first touch.
A name added to the __all__ of a submodule lucidq.workflow star-imports goes
here too (test_workflow_qconfig checks that the two agree).
"""

WORKFLOW_NAMES = (
    # qconfig.py
    "QConfig",
    "FloatFunctional",
    "get_default_qconfig",
    "get_default_qat_qconfig",
    "default_qconfig",
    "default_qat_qconfig",
    "default_dynamic_qconfig",
    "per_channel_dynamic_qconfig",
    "default_per_channel_qconfig",
    # qconfig_mapping.py
    "QConfigMapping",
    "get_default_qconfig_mapping",
    "get_default_qat_qconfig_mapping",
    # observer.py
    "ObserverBase",
    "MinMaxObserver",
    "MovingAverageMinMaxObserver",
    "PerChannelMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver",
    "HistogramObserver",
    "PercentileObserver",
    "EntropyObserver",
    "MseObserver",
    "FixedQParamsObserver",
    "PlaceholderObserver",
    "NoopObserver",
    "default_observer",
    "default_weight_observer",
    "default_per_channel_weight_observer",
    "default_histogram_observer",
    "default_placeholder_observer",
    "default_dynamic_quant_observer",
    "default_fixed_qparams_range_0to1_observer",
    "default_fixed_qparams_range_neg1to1_observer",
    # fake_quantize.py
    "FakeQuantizeBase",
    "FakeQuantize",
    "FixedQParamsFakeQuantize",
    "LearnableFakeQuantize",
    "default_fake_quant",
    "default_weight_fake_quant",
    "default_per_channel_weight_fake_quant",
    "default_histogram_fake_quant",
    "default_fixed_qparams_range_0to1_fake_quant",
    "default_fixed_qparams_range_neg1to1_fake_quant",
    "enable_observer",
    "disable_observer",
    "enable_fake_quant",
    "disable_fake_quant",
    # quantize.py: the model workflow
    "prepare",
    "prepare_qat",
    "convert",
    "propagate_qconfig",
    "quantize_dynamic",
    "quantize_weight_only",
    "DynamicConfig",
    "WeightOnlyConfig",
    "fuse_modules",
    "fuse_modules_qat",
    "fold_batch_norm",
    "QuantStub",
    "DeQuantStub",
    "QuantWrapper",
    "save_quantized",
    "load_quantized",
    "register_static",
    "register_qat",
    "register_dynamic",
    "register_weight_only",
    # fx: graph mode
    "prepare_fx",
    "prepare_qat_fx",
    "convert_fx",
    "fuse_fx",
    "summary",
    # calibration.py: statistics of a model's Linears and their safetensors file
    "LinearStatistics",
    "collect_calibration_statistics",
    "save_calibration_statistics",
    "load_calibration_statistics",
    # algorithms.py: weight algorithms beyond RTN on a model
    "gptq",
    "awq",
    "smooth_quant",
    "hqq",
    "to_weight_only",
)

TORCH_MISSING = (
    "lucidq.workflow (QConfig, observers as torch modules, prepare / convert, ...) needs "
    "PyTorch, which is not installed for this Python. Install it with "
    "`apt-get install python3-torch` (Debian 12: torch 1.13) and run /usr/bin/python3. "
    "The rest of lucidq works without torch."
)
