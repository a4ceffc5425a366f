"""The whole loop on one machine (``spanrl demo``) and the cross-cycle report (``spanrl report``)."""
