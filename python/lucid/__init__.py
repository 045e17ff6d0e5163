"""The `lucid` namespace: `lucid.quantization` is the lucidq module under Lucid's name."""
