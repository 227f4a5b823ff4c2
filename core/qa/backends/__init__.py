"""Forward passes for the QA engine, one backend a module, behind one callable
``(encoded batch, threads) -> (start logits, end logits)``.

Only the forward pass differs between backends: windows, batching and the span decoding
(core.qa.decode) are the engine's and are shared, so a backend can change speed and logits but
never how an answer is read off them.

====================  =======================================================================
``selection``         the backend names, "default" and the rule that picks a model's default
                      (fastest within 0.5 F1 of torch fp32), why one cannot run here,
                      ``make_forward`` (the engine's one entry)
``torch_eager``       ``torch`` (fp32) and ``torch-bf16`` (bf16 weights, where computed natively)
``onnx_runtime``      ``onnx`` and ``onnx-int8``: the export, its cache, the sessions
``int8_split``        the int8 recipe's outlier channels of the FFN output projections, kept fp32
``int8_per_token``    the int8 recipe's per-token activation scales for every weight MatMul
``openvino_runtime``  ``openvino`` (bf16), ``openvino-int8`` (NNCF post-training int8, FFN
                      outputs in bf16) and ``openvino-int8-full`` (every weight product int8)
====================  =======================================================================

The backends' fingerprint tags (a recipe's part in the prediction cache key) are stored identities:
:data:`core.compat.FINGERPRINT_TAGS`.
"""
