"""Loading generated configs into real routing software: FRR in namespaces, OpenSM on ibsim."""
