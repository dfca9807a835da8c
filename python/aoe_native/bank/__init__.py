"""The knowledge bank: tuned results kept between runs (:mod:`.store`) and the policy of
what enters it (:mod:`.policy`)."""
