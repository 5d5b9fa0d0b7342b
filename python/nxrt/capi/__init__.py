"""Mirror of ``onnxruntime.capi`` so imports of its exception module keep working."""
