//! Caffe2-style growth: resize_, reserve, extend_, shrink_to, share_data.
