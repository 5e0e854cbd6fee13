"""The Topic Assistant (topic-assistant.txt): its feature and the topic model it reads at run time.

    layers.py       SIA, TEMA and DRM (TA eq. 6-9) as one feature, and its side data ``theta``
    topic_model.py  the Poisson factor analysis topic model (TA eq. 1-5): loading, theta inference
    similarity.py   the semantic similarity SS of summaries (TA eq. 10)

The topic model is fitted by ``preprocess/topic_model.py``; inspection/topics.py reads it.
"""
