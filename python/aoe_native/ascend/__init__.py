"""The Ascend target: SoC descriptions (:mod:`.platforms`) and the AI Core cost model's
operator façade (:mod:`.ops`: estimate, tiling spaces, tune_op)."""
