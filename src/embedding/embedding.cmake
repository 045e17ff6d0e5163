# Row-wise quantized embedding tables (include/lucid/quantization/embedding.hpp).
target_sources(lucidq PRIVATE embedding/table.cpp embedding/lookup.cpp)
