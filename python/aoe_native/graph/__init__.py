"""The graph pipeline: the IR (:mod:`.ir`), front-ends (:mod:`.onnx`), lowering of nodes
to cost-model operators (:mod:`.lowering`) and the partition into kernels and tasks
(:mod:`.partition`)."""
