"""Module paths in messages: prepare and convert record each module's dotted name on it."""

__all__ = ["label", "record_paths"]


def record_paths(model):
    """Stores every submodule's dotted path (the model itself: "<model>") as _lucidq_path."""
    for name, module in model.named_modules():
        module._lucidq_path = name or "<model>"


def label(module):
    """'Linear "fc1"' once record_paths ran over the model, else the type name alone."""
    path = getattr(module, "_lucidq_path", None)
    kind = type(module).__name__
    return f'{kind} "{path}"' if path is not None else kind
