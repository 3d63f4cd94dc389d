"""The Triton-interpreter tests: collected only in a session started with TRITON_INTERPRET=1
(tests/test_interpret_session.py starts one), where the kernels run on CPU tensors."""
