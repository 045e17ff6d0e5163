"""The `lucid` namespace: `lucid.quantization` is the lucidq module under the seed's name."""
